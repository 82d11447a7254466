/*
 * shm.pml - a Promela model of the shared-memory channel protocol: put, loan, REC, get, G-WAIT.
 *
 * The protocol is spec/shm-protocol.md. Its steps have labels (W1..W10, REC, G1..G6, G-WAIT); every statement
 * below that models a step names its label in a comment, and crates/shm carries the same labels (`// W3:`) at the
 * lines that perform the steps. Change one, change the other and the page.
 *
 * Checked by spec/check (spin -a, gcc, pan) in several configurations, each chosen with -D switches (defaults
 * below), and in broken variants (the BUG_ switches) that must fail; spec/README.md says how to read the results.
 *
 * What is modelled
 *   - the writer lock, whose holder's death the next locker detects (the kernel drops the dead process's liveness
 *     byte lock): a writer that dies holding it leaves it owner-dead; the next locker takes it over, runs REC,
 *     marks it consistent. A locker that dies during REC leaves it owner-dead again.
 *   - NW writers doing PUTS (writer 0) and PUTS1 (the other) puts. A put is a copy or a loan (W1-W4, the caller
 *     fills the frame, commit W6-W10, or drop: unlock without publishing). Writer 0 may die before any step of put,
 *     loan or REC: every step is ST(...), "die here or do the step"; with RESTARTS it comes back as a new process
 *     that may find the lock owner-dead, run REC and die again.
 *   - NR readers, in order (G2: last + 1, raised when it fell behind) or newest-only; each does gets until it
 *     closes the channel; reader MORTAL_READER may die before any step. A get polls or waits (G-WAIT); it may
 *     return "buffer too small" (G4) for a message of M cells, and "retry" after MAXTRY failures. The futex
 *     is modelled as the kernel does it: futex_wait sleeps only if `wake` still equals w0, futex_wake(all) wakes
 *     every sleeper; the slice (or the caller's deadline) is a timer that may fire at any moment of a sleep.
 *   - memory: Promela is sequentially consistent and every shared load and store is its own step, except where a
 *     comment says why two are one. The fences of the page (W3/G5, W4/W6/G3) are what make the real code keep this
 *     program order; the BUG_ switches model what it would do without them (W3's store after the copy, G5's load
 *     before it). The waiters/wake handshake of W10 and G-WAIT is the store-buffering pattern: sequential
 *     consistency holds for it because crates/shm makes those accesses SeqCst (the page says Release).
 *   - sizes, in cells (a cell stands for 8 bytes, the frame alignment, so align8 is the identity): N index
 *     entries, a data ring of C = 3M cells, messages of 1 or M = 2 cells. A message's content is MSG(seq, len) in
 *     each of its cells, so a torn or misattributed read shows as a cell that is not MSG(want, len). Byte
 *     positions are monotonic counters; position p lives in cell p % C.
 *   - with BELL, reader 0 waits in a wait set (B-REG at its start, B-WAIT instead of G-WAIT) and every W10 is
 *     followed by B-RING: the doorbell's ready bit, word and `sleeping`, the channel's registration; the rescue
 *     timer is SLICE's. One channel, one set: the hints and the bitmap's two levels are one bit (set together by a
 *     ring, read summary first by the set), which is what the no-lost-wake-up argument is about.
 *   - not modelled: put_utime and origin (stored and loaded like start and len, between the same seqlock accesses,
 *     so the same argument covers them), statistics counters, corrupt files, polling before sleeping.
 *
 * Properties (spec/check runs each; a BUG_ variant shows that each one can fail)
 *   (1) no torn read: at G6 the cells a reader accepts are all MSG(want, len)                      assert at G6
 *   (2) newest always reachable: once anything is published, in every state the entry of `newest`
 *       holds it, `tail` has not passed its start and its cells hold it                            monitor
 *   (3) no deadlock: no invalid end state (a writer waiting forever for the lock); no reader
 *       asleep forever with something new (monitor, at `timeout`); no wake-up lost except to a
 *       writer that died between W7 and W10 (assert when a sleeping reader's timer fires); with
 *       LIVE (no timer, nobody dies): [] (asleep with something new -> <> woken)                    ltl woken
 *   (4) a reader's sequence numbers only go forward                                                assert at G6
 *   (5) an in-order reader is told exactly how many it missed: missed == want - previous - 1        assert at G6
 */

/* ---- sizes (override with spin -DN=3 ...) ---- */
#ifndef N
#define N 2            /* index entries */
#endif
#ifndef M
#define M 2            /* largest message, in cells */
#endif
#ifndef C
#ifdef BUG_C2M
#define C (2 * M)      /* BUG: a ring of 2M cells: the next frame may need the newest one's cells */
#else
#define C (3 * M)      /* data ring cells: the channel is made with C >= 3M */
#endif
#endif
#ifndef NW
#define NW 2           /* writers (1 or 2) */
#endif
#ifndef MORTAL_WRITER
#define MORTAL_WRITER 1    /* writer 0 may die at any step (0: nobody dies) */
#endif
#ifndef PUTS
#define PUTS 2         /* puts by writer 0 (mortal) */
#endif
#ifndef PUTS1
#define PUTS1 PUTS     /* puts by each other writer */
#endif
#ifndef RESTARTS
#define RESTARTS 0     /* times writer 0 restarts after dying */
#endif
#ifndef NR
#define NR 1           /* readers (1 or 2) */
#endif
#ifndef MODE0
#define MODE0 1        /* reader 0 reads in order (1) or newest-only (0); reader 1 the other way */
#endif
#ifndef MORTAL_READER
#define MORTAL_READER NR   /* which reader may die at any step (NR: none) */
#endif
#ifdef BUG_NO_SLICE
#define SLICE 0        /* BUG: futex_wait(wake, w0) with no timeout */
#endif
#ifndef SLICE
#define SLICE 1        /* a sleeping reader's futex_wait times out (the slice, or the caller's deadline) */
#endif
#ifndef MAXTRY
#define MAXTRY 2       /* G3/G5 failures in a row before get returns "retry" */
#endif

#define MSG(s, l)   ((s) * 4 + (l))
#define E(s)        ((s) % N)

/* the writer lock: FREE, held by writer w (w + 1), or OWNERDEAD (its holder died) */
#define FREE        0
#define OWNERDEAD   (NW + 1)

/* ---- shared memory: the channel file ---- */
/* writer state, only touched under the lock */
byte lock = FREE;
byte next_seq = 1;     /* sequence numbers start at 1 */
byte data_head = 0;
/* read without any lock */
byte newest = 0;
byte tail = 0;
/* wake, the futex word, only grows (a u32 in the code: it would take 2^32 puts during one futex_wait to wrap), so
   for reader r "wake == w0" is exactly "no wake.fetch_add since r read w0": the model keeps that per reader,
   w0st[r], instead of the counter and w0 (fewer states, same behaviour) */
byte waiters = 0;
/* index ring */
byte idx_seq[N];
byte idx_start[N];
byte idx_len[N];
/* data ring */
byte data[C];

/* ---- per-process state the monitor reads ---- */
byte last[NR];         /* a reader's position (its own, in its process) */
byte w0st[NR];         /* reader r: 0 = holds no w0, W0SAME = wake == w0, W0CHANGED = wake != w0 */
#define W0SAME    1
#define W0CHANGED 2
bit asleep[NR];        /* the kernel's futex queue: reader r sleeps in futex_wait */
/* ghost: pend[w] = writer w published a message (W7, or REC's W7) and has not finished the W10 that announces it.
   When a writer dies its pend bit becomes `orphan`; the next W10's fetch_add covers what was published before it,
   so that writer takes the orphan over. A sleeping reader with something new is only excusable while some pend bit
   (or the orphan) is set. */
bit pend[NW];
bit orphan;

#ifdef BELL
/* ---- wait sets (spec/shm-protocol.md, "Wait sets"): reader 0 sleeps on its doorbell instead of the channel's
   futex word. The doorbell file and the channel's registration slot, for one set and one channel: ---- */
bit breg;              /* the set's registration in the channel header (a bell_slots entry and its bell_mask bit) */
bit bready;            /* the doorbell's ready bit for this channel (with its summary bit: set together, read in
                          the order summary then word, so one bit here) */
bit bsleeping;         /* the doorbell's `sleeping` */
byte bw0;              /* like w0st: 0, W0SAME = the doorbell word still holds the w0 the set read, W0CHANGED */
#endif

#define NEWEST_OK (newest == 0 || \
    (idx_seq[E(newest)] == newest && tail <= idx_start[E(newest)] && \
     data[idx_start[E(newest)] % C] == MSG(newest, idx_len[E(newest)]) && \
     (idx_len[E(newest)] == 1 || data[(idx_start[E(newest)] + 1) % C] == MSG(newest, idx_len[E(newest)]))))

#define STUCK(r) (asleep[r] && newest > last[r])
#if NR == 1
#define NO_STUCK_READER (!STUCK(0))
#else
#define NO_STUCK_READER (!STUCK(0) && !STUCK(1))
#endif
#if NW == 1
#define ANY_PEND (pend[0] || orphan)
#else
#define ANY_PEND (pend[0] || pend[1] || orphan)
#endif

/* Every step of a mortal process may instead be its death: `ST(stmt)` is "die here, or do stmt"; STB(guard -> stmt)
   is the same for a step that blocks until guard holds. (ST's leading `true` keeps an `else` inside stmt local to
   its own `if`: spin would otherwise read it as the else of the die-or-step choice, never taken.) */
#define ST(...) if :: mortal -> goto died :: atomic { true; __VA_ARGS__ } fi
#define STB(...) if :: mortal -> goto died :: atomic { __VA_ARGS__ } fi

/* W10 (and REC's wake): wake.fetch_add(1, SeqCst); if waiters.load(SeqCst) > 0: futex_wake(wake, all) */
#define PEND_TAKE pend[me] = pend[me] || orphan; orphan = 0
#if defined(BELL) && NR == 1
#define FUTEX_WAKE_ALL skip          /* reader 0 sleeps on its doorbell, not on the channel's word */
#define WAKE_ADD if :: w0st[0] == W0SAME -> w0st[0] = W0CHANGED :: else fi
#elif defined(BELL)
#define FUTEX_WAKE_ALL asleep[1] = 0
#define WAKE_ADD if :: w0st[0] == W0SAME -> w0st[0] = W0CHANGED :: else fi; \
                 if :: w0st[1] == W0SAME -> w0st[1] = W0CHANGED :: else fi
#elif NR == 1
#define FUTEX_WAKE_ALL asleep[0] = 0
#define WAKE_ADD if :: w0st[0] == W0SAME -> w0st[0] = W0CHANGED :: else fi
#else
#define FUTEX_WAKE_ALL asleep[0] = 0; asleep[1] = 0
#define WAKE_ADD if :: w0st[0] == W0SAME -> w0st[0] = W0CHANGED :: else fi; \
                 if :: w0st[1] == W0SAME -> w0st[1] = W0CHANGED :: else fi
#endif
#ifndef BELL
#define WAKE_READERS \
    ST(WAKE_ADD; PEND_TAKE);                                        /* W10: wake.fetch_add(1, SeqCst) */ \
    ST(if :: waiters > 0 -> FUTEX_WAKE_ALL :: else fi; pend[me] = 0) /* W10: if waiters.load(SeqCst) > 0: futex_wake */
#else
/* W10, then B-RING: the put is announced (pend cleared) only once the doorbell is rung too */
#define WAKE_READERS \
    ST(WAKE_ADD; PEND_TAKE);                                        /* W10: wake.fetch_add(1, SeqCst) */ \
    ST(if :: waiters > 0 -> FUTEX_WAKE_ALL :: else fi);             /* W10: if waiters.load(SeqCst) > 0: futex_wake */ \
    RING_BELL
#ifdef BUG_NO_RING
#define RING_BELL ST(pend[me] = 0)                                  /* BUG: B-RING skipped */
#else
#define RING_BELL \
    ST(rg = breg);                                                  /* B-RING: fence(SeqCst); bell_mask, slot loads */ \
    if \
    :: rg -> \
        ST(bready = 1);                                             /* B-RING: ready, summary fetch_or */ \
        ST(if :: bw0 == W0SAME -> bw0 = W0CHANGED :: else fi);      /* B-RING: word.fetch_add(1) */ \
        ST(if :: bsleeping -> asleep[0] = 0 :: else fi; pend[me] = 0) /* B-RING: fence; if sleeping: futex_wake */ \
    :: else -> ST(pend[me] = 0)                                     /* B-RING: no set registered */ \
    fi; \
    rg = 0
#endif
#endif

/* writer `me` doing `todo` puts; if mortal, it may die at any step, and then restart `lives` times (a new process
   with the same role, which may find the lock owner-dead and run REC, and die again, during REC too) */
proctype writer(byte me; bool mortal; byte todo; byte lives)
{
    byte pos, mlen, e;
    bool rec;
    bit rg;            /* B-RING: the registration the put found */

    do
    :: todo > 0 ->
        /* W1: lock; owner dead if its holder died */
#ifdef BUG_NOT_ROBUST
        STB(lock == FREE -> lock = me + 1; rec = 0);                  /* W1 (BUG: a plain mutex) */
#else
        STB((lock == FREE || lock == OWNERDEAD) -> rec = (lock == OWNERDEAD); lock = me + 1);   /* W1 */
#endif
        if
        :: rec ->
            /* REC: e = index[next_seq % N]; did the dead writer finish W6? */
            ST(e = E(next_seq); rec = (idx_seq[e] == next_seq));     /* REC */
            if
#ifndef BUG_REC_NO_PUBLISH
            :: rec ->
                ST(newest = next_seq; pend[me] = 1);                 /* REC: finish W7 */
                ST(data_head = idx_start[e] + idx_len[e]);           /* REC: finish W8 (align8 is the identity) */
                ST(next_seq++)                                       /* REC: finish W8 */
#endif
            :: else
            fi;
            WAKE_READERS;                                            /* REC: count the recovery, wake (W10) */
            ST(rec = 0; e = 0)                                       /* W1: marked consistent         */
        :: else
        fi;

        /* W2: pos = data_head; a frame that would cross the end of the ring starts at the next multiple of C.
           (The message is 1 or M cells.) W3: free space: need = pos + len - C; if need > tail:
           tail.store(need, Relaxed); fence(Release). One step: W2 reads only the writer state, which only lock
           holders touch, so nothing can tell W2 and W3 apart but a death between them, which is the same as a death
           before W2. */
#define STEP_W2 if :: mlen = 1 :: mlen = M fi; pos = data_head; \
                if :: pos % C + mlen > C -> pos = pos - pos % C + C :: else fi
#define STEP_W3 if :: pos + mlen > C + tail -> tail = pos + mlen - C :: else fi
#ifndef BUG_W3_LATE
        ST(STEP_W2; STEP_W3);                                        /* W2, W3 */
#else
        ST(STEP_W2);                                                 /* W2 */
#endif
        /* W4: invalidate the entry this put reuses: e.seq.store(0, Relaxed); fence(Release) */
        ST(e = E(next_seq); idx_seq[e] = 0);                         /* W4 */
        /* W5: copy the message (or the caller fills the loan), one cell at a time */
        ST(data[pos % C] = MSG(next_seq, mlen));                      /* W5 */
        if
        :: mlen == M -> ST(data[(pos + 1) % C] = MSG(next_seq, mlen)) /* W5 */
        :: else
        fi;
#ifdef BUG_W3_LATE
        /* BUG: W3 after the copy (no release fence between the tail store and the data stores) */
        ST(STEP_W3);                                                 /* W3 */
#endif
        /* a put is a copy (W5 above) or a loan: W1-W4, the caller fills the frame (W5), then commit (W6-W10) or drop.
           The mortal writer's loans are its puts (it may die at any step of either); the other may drop a loan. */
        if
        :: !mortal -> lock = FREE;                                   /* loan dropped: W9 without W6-W8 */
           goto next
        :: skip                                                      /* copy put, or loan committed: W6.. */
        fi;
        /* W6: start, len (put_utime, origin) Relaxed, then seq Release. start and len are one step here: readers
           load them between the two seq loads of G3, which reject any overlap with W4..W6. */
        ST(idx_start[e] = pos; idx_len[e] = mlen);                   /* W6 */
        ST(idx_seq[e] = next_seq);                                   /* W6 */
        ST(newest = next_seq; pend[me] = 1);                         /* W7 */
#ifdef BUG_W8_ORDER
        ST(next_seq++);                                              /* W8 (BUG: next_seq before data_head) */
        ST(data_head = pos + mlen);                                   /* W8 */
#else
        ST(data_head = pos + mlen);                                   /* W8: data_head = align8(pos + len) */
        ST(next_seq++);                                              /* W8: next_seq += 1 */
#endif
        ST(lock = FREE);                                             /* W9: unlock */
        WAKE_READERS;                                                /* W10 */
next:
        atomic { todo--; pos = 0; mlen = 0; e = 0 }
    :: else -> break
    od;
    goto done;
died:
    /* killed: a held lock is now owner-dead (its holder's liveness byte lock is gone) */
    atomic {
        if :: lock == me + 1 -> lock = OWNERDEAD :: else fi;
        orphan = orphan || pend[me]; pend[me] = 0;
        if :: lives > 0 -> run writer(me, mortal, todo, lives - 1) :: else fi;   /* restarted: the put is tried again */
        pos = 0; mlen = 0; e = 0; rec = 0; todo = 0; rg = 0
    }
done:
    skip
}

proctype reader(byte me; bool inorder; bool mortal)
{
    /* the get in progress (zeroed between gets so that idle readers share states) */
    byte want, st, ln, tries;
    bit bad;             /* G3 or G5 rejected message want */
    bit torn;            /* G5: a cell copied is not MSG(want, ln) */
    /* across gets */
    byte ret = 0;        /* the last sequence number returned */
    byte missed = 0;     /* in order: how many were missed since the last returned message */
#ifdef BELL
    /* B-REG: the set registers on the channel; its first look (the set hands a new channel out at once) is the
       re-check: the first get below */
    if
    :: me == 0 -> ST(breg = 1)                                       /* B-REG: slot, bell_mask bit; fence(SeqCst) */
    :: else
    fi;
#endif

    do
    :: atomic { ret = 0; missed = 0; last[me] = 0;
#ifdef BELL
                if :: me == 0 -> breg = 0 :: else fi;                /* B-REG undone: the set removes the channel */
#endif
                break }                                              /* the reader closes the channel (and is forgotten) */
    :: skip ->           /* one get */
G1:     /* G1: n = newest.load(Acquire); anything newer than last? G2: pick want */
        ST(if
           :: newest > last[me] && inorder ->
              want = last[me] + 1;
              if
              :: newest >= N && want < newest - N + 1 ->             /* G2: fell behind: raise, count missed */
#ifndef BUG_G2_NO_COUNT
                 missed = missed + newest - N + 1 - want;
#endif
                 want = newest - N + 1
              :: else
              fi
           :: newest > last[me] && !inorder -> want = newest         /* G2: newest-only */
           :: else -> want = 0
           fi);
        if
        :: want > 0 -> goto G3
        :: else
        fi;
        /* nothing new: return "nothing new" (a poll, or the caller's deadline has passed), or wait */
        if
        :: goto returned
        :: skip
        fi;
#ifdef BELL
        if
        :: me == 0 -> goto BWAIT                                     /* reader 0 waits in its wait set */
        :: else
        fi;
#endif
        /* G-WAIT (the order of crates/shm: w0, register, re-check, sleep) */
#ifndef BUG_W0_LATE
        ST(w0st[me] = W0SAME);                                       /* G-WAIT: w0 = wake.load(SeqCst) */
#endif
        ST(waiters++);                                               /* G-WAIT: waiters.fetch_add(1, SeqCst) */
#ifndef BUG_NO_RECHECK
        /* G-WAIT: re-check G1 (newest.load(SeqCst)); if newer: waiters.fetch_sub(1), go to G1 (one step here: the
           early fetch_sub can only make a writer call futex_wake for nobody) */
        ST(if :: newest > last[me] -> waiters--; w0st[me] = 0; goto G1 :: else fi);
#endif
#ifdef BUG_W0_LATE
        ST(w0st[me] = W0SAME);                                       /* G-WAIT (BUG: w0 read after the re-check) */
#endif
        ST(asleep[me] = (w0st[me] == W0SAME); w0st[me] = 0);         /* G-WAIT: futex_wait(wake, w0, slice) */
end_sleep:
        if
        :: !asleep[me] -> skip                                       /* G-WAIT: woken by W10's futex_wake */
#if SLICE
        :: atomic { asleep[me] ->                                    /* G-WAIT: the slice (or deadline) expires */
               assert(newest <= last[me] || ANY_PEND);               /* (3) no wake-up lost but to a dead writer */
               asleep[me] = 0 }
#endif
        :: mortal -> goto died
        fi;
        ST(waiters--);                                               /* G-WAIT: waiters.fetch_sub(1); go to G1 */
        goto G1;

#ifdef BELL
BWAIT:  /* B-WAIT (crates/shm WaitSet::wait: take what rang, else w0, sleeping, re-check, sleep) */
        ST(if :: bready -> bready = 0; goto G1 :: else fi);          /* B-WAIT: summary.swap(0): rung, look again */
#ifndef BUG_BELL_W0_LATE
        ST(bw0 = W0SAME);                                            /* B-WAIT: w0 = word.load(SeqCst) */
#endif
        ST(bsleeping = 1);                                           /* B-WAIT: sleeping.fetch_add(1); fence(SeqCst) */
#ifndef BUG_BELL_NO_RECHECK
        ST(if :: bready -> bsleeping = 0; bw0 = 0; goto G1 :: else fi);  /* B-WAIT: re-check the summary */
#endif
#ifdef BUG_BELL_W0_LATE
        ST(bw0 = W0SAME);                                            /* B-WAIT (BUG: w0 read after the re-check) */
#endif
        ST(asleep[me] = (bw0 == W0SAME); bw0 = 0);                   /* B-WAIT: futex_wait(word, w0, rescue) */
end_bsleep:
        if
        :: !asleep[me] -> skip                                       /* B-WAIT: woken by B-RING's futex_wake */
#if SLICE
        :: atomic { asleep[me] ->                                    /* B-WAIT: the rescue (or deadline) expires */
               assert(newest <= last[me] || ANY_PEND);               /* (3) no wake-up lost but to a dead writer */
               asleep[me] = 0 }
#endif
        :: mortal -> goto died
        fi;
        ST(bsleeping = 0);                                           /* B-WAIT: sleeping.fetch_sub(1); go to G1 */
        goto G1;
#endif

G3:     /* G3: the index entry of want as a seqlock */
        ST(bad = (idx_seq[E(want)] != want));                        /* G3: s1 = e.seq.load(Acquire) */
        if
        :: bad -> goto failed                                        /* G3: overwritten */
        :: else
        fi;
        ST(st = idx_start[E(want)]; ln = idx_len[E(want)]);          /* G3: start, len (Relaxed); fence(Acquire) */
#ifndef BUG_G3_NO_S2
        ST(bad = (idx_seq[E(want)] != want));                        /* G3: s2 = e.seq.load(Relaxed) */
        if
        :: bad -> goto failed                                        /* G3: overwritten */
        :: else
        fi;
#endif
        /* G4: a message longer than the caller's buffer (here: M cells, a buffer of 1 cell, when the caller says so):
           return "buffer too small" and change nothing. The model counted G2's skip at once; it takes it back here
           (the code must count it only once the reader moves past it). */
        if
        :: ln == M ->
            if
            :: atomic {
#ifndef BUG_G4_KEEPS_COUNT
                   if :: inorder -> missed = missed - (want - last[me] - 1) :: else fi;
#endif
                   goto returned }                                   /* G4: buffer too small */
            :: skip
            fi
        :: else
        fi;
#ifdef BUG_G5_EARLY
        ST(bad = (tail > st));                                       /* G5 (BUG: tail loaded before the copy) */
#endif
        ST(torn = (data[st % C] != MSG(want, ln)));                  /* G5: copy */
        if
        :: ln == M -> ST(torn = torn || data[(st + 1) % C] != MSG(want, ln))  /* G5: copy */
        :: else
        fi;
#if !defined(BUG_G5_EARLY) && !defined(BUG_NO_G5)
        ST(bad = (tail > st));                                       /* G5: fence(Acquire); t = tail.load(Relaxed) */
#endif
        if
        :: bad -> goto failed                                        /* G5: t > start: may have been overwritten */
        :: else
        fi;
        /* G6: accept */
        atomic {
            assert(!torn);                                           /* (1) no torn read */
            assert(want > ret);                                      /* (4) only forward */
            if
            :: inorder -> assert(missed + ret + 1 == want)           /* (5) told exactly how many it missed */
            :: else
            fi;
#ifndef BUG_G6_NO_LAST
            last[me] = want;                                         /* G6: last = want */
#endif
            ret = want;
            missed = 0;
            goto returned
        }
failed:
        /* G3/G5 failed: in order, count want missed and set last = want; newest-only changes nothing (crates/shm:
           Reader::lost); then try again from G1, "retry" after MAXTRY failures in a row */
        atomic {
            if :: inorder -> missed++; last[me] = want :: else fi;
            tries++;
            want = 0; st = 0; ln = 0; bad = 0; torn = 0;
            if
            :: tries >= MAXTRY -> goto returned                      /* G3: "retry" */
            :: else -> goto G1
            fi
        }
returned:
        atomic { want = 0; st = 0; ln = 0; bad = 0; torn = 0; tries = 0 }
    od;
    goto done;
died:
    /* killed: the kernel takes it off the futex queue; `waiters` stays too high if it was waiting */
    atomic { asleep[me] = 0; w0st[me] = 0; want = 0; st = 0; ln = 0; tries = 0; bad = 0; torn = 0;
             ret = 0; missed = 0; last[me] = 0 }
done:
    skip
}

/* (2) and (3): checked in every state / when nothing else can move */
active proctype monitor()
{
end_watch:
    if
    :: !NEWEST_OK -> assert(NEWEST_OK)                               /* (2) newest always reachable */
#ifndef LIVE
    :: timeout -> assert(NO_STUCK_READER)                            /* (3) no reader asleep with something new */
#endif
    fi
}

#ifdef LIVE
/* (3) liveness, checked with weak fairness (pan -a -f) and SLICE 0: a reader asleep with something new is woken
   (by the futex alone: nothing else can wake it) */
ltl woken { [] ((asleep[0] && newest > last[0]) -> <> !asleep[0]) }
#endif

init
{
    byte w = 0;
    atomic {
        do
        :: w < NW -> run writer(w, w == 0 && MORTAL_WRITER, (w == 0 -> PUTS : PUTS1), (w == 0 -> RESTARTS : 0)); w++
        :: else -> break
        od;
        w = 0;
        do
        :: w < NR -> run reader(w, (w == 0) == MODE0, w == MORTAL_READER); w++
        :: else -> break
        od
    }
}
