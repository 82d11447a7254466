import java.io.IOException;
import java.util.concurrent.atomic.AtomicLongArray;

import lcm.lcm.LCM;
import lcm.lcm.LCMDataInputStream;
import lcm.lcm.LCMSubscriber;

/**
 * The Java roles of the echo and latency suites (bench/README.md): python/roles.py's echo and latency roles, with the
 * same arguments and output lines, written once against LCM's Java API and run on either jar (LCM 1.5.3's own
 * lcm.jar, or Nerve's from bindings/java), so the two rows differ only in the jar on the class path.
 *
 *     java Roles echo-client URL REQ REP MAX_MS
 *     java Roles echo-source URL REQ REP_PREFIX CLIENTS RATE_BPS DURATION_MS DRAIN_MS
 *     java Roles lat-recv URL CHANNEL COUNT MAX_MS
 *     java Roles lat-send URL CHANNEL COUNT HZ SIZE
 *
 * A message's bytes 8..16 are the sender's {@code System.nanoTime()} (CLOCK_MONOTONIC on Linux, the clock every
 * other role stamps with), little-endian, taken just before it publishes; a receiver reads the clock first thing in
 * its handler, so a latency figure is Java publish to Java handler. A message shorter than 16 bytes ends a run.
 * Subscribers run on the jar's receive thread, as in any LCM Java program.
 */
public final class Roles {
    static final int MSG_SIZE = 800;

    static long stamp(byte[] b, int off) {
        long v = 0;
        for (int i = 7; i >= 0; i--) v = (v << 8) | (b[off + i] & 0xff);
        return v;
    }

    static void put(byte[] b, int off, long v) {
        for (int i = 0; i < 8; i++) b[off + i] = (byte) (v >>> (8 * i));
    }

    /** The first {@code n} bytes of a received message (all of it if shorter). */
    static byte[] head(LCMDataInputStream ins, int n) throws IOException {
        byte[] b = new byte[Math.min(n, ins.available())];
        ins.readFully(b);
        return b;
    }

    /**
     * Sleeps until {@code System.nanoTime()} reaches {@code t}: parkNanos, which sleeps to the microsecond, as the
     * other roles' absolute clock_nanosleep does (Thread.sleep rounds to whole milliseconds before Java 21, and a
     * sender woken that coarsely measured 30 us slower to a Rust receiver).
     */
    static void sleepUntil(long t) {
        while (true) {
            long left = t - System.nanoTime();
            if (left <= 0) return;
            java.util.concurrent.locks.LockSupport.parkNanos(left);
        }
    }

    static void echoClient(String url, String req, final String rep, long maxMs) throws Exception {
        final LCM lc = new LCM(url);
        final boolean[] stop = {false};
        lc.subscribe(req, new LCMSubscriber() {
            public void messageReceived(LCM l, String channel, LCMDataInputStream ins) {
                try {
                    byte[] data = new byte[ins.available()];
                    ins.readFully(data);
                    if (data.length < 16) {
                        synchronized (stop) {
                            stop[0] = true;
                            stop.notifyAll();
                        }
                    } else {
                        lc.publish(rep, data, 0, data.length);
                    }
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            }
        });
        System.out.println("ready");
        System.out.flush();
        long deadline = System.nanoTime() + maxMs * 1_000_000L;
        synchronized (stop) {
            while (!stop[0]) {
                long left = (deadline - System.nanoTime()) / 1_000_000L;
                if (left <= 0) break;
                stop.wait(left);
            }
        }
        lc.close();
    }

    static void echoSource(String url, String req, final String prefix, final int clients, double rateBps,
            long durationMs, long drainMs) throws Exception {
        LCM lc = new LCM(url);
        final AtomicLongArray received = new AtomicLongArray(clients);
        final long[][] rtt = {new long[1 << 16]};
        final int[] nrtt = {0};
        lc.subscribe(prefix + "[0-9]+", new LCMSubscriber() {
            public void messageReceived(LCM l, String channel, LCMDataInputStream ins) {
                long now = System.nanoTime();
                try {
                    byte[] h = head(ins, 16);
                    if (h.length < 16) return;
                    int k;
                    try {
                        k = Integer.parseInt(channel.substring(prefix.length()));
                    } catch (NumberFormatException e) {
                        return;
                    }
                    if (k < 0 || k >= clients) return;
                    synchronized (rtt) {
                        if (nrtt[0] == rtt[0].length) rtt[0] = java.util.Arrays.copyOf(rtt[0], 2 * nrtt[0]);
                        rtt[0][nrtt[0]++] = now - stamp(h, 8);
                    }
                    received.incrementAndGet(k);
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            }
        });
        byte[] msg = new byte[MSG_SIZE];
        for (int i = 0; i < MSG_SIZE; i++) msg[i] = (byte) (i * 7);
        double perS = rateBps / MSG_SIZE;
        long sent = 0;
        long t0 = System.nanoTime();
        long end = t0 + durationMs * 1_000_000L;
        while (true) {
            long now = System.nanoTime();
            if (now >= end) break;
            long due = perS > 0 ? (long) ((now - t0) * 1e-9 * perS) + 1 : sent + 1;
            while (sent < due) {
                put(msg, 0, sent);
                put(msg, 8, System.nanoTime());
                lc.publish(req, msg, 0, msg.length);
                sent++;
            }
            if (perS > 0) sleepUntil(Math.min(t0 + (long) (sent / perS * 1e9), end));
        }
        long sendNs = System.nanoTime() - t0;
        long drainEnd = System.nanoTime() + drainMs * 1_000_000L;
        while (System.nanoTime() < drainEnd) {
            long got = 0;
            for (int k = 0; k < clients; k++) got += received.get(k);
            if (got >= sent * clients) break;
            Thread.sleep(1);
        }
        for (int i = 0; i < 3; i++) {
            lc.publish(req, new byte[8], 0, 8);
            Thread.sleep(5);
        }
        StringBuilder out = new StringBuilder();
        out.append("sent ").append(sent).append(' ').append(sendNs).append('\n');
        for (int k = 0; k < clients; k++) out.append("client ").append(k).append(' ').append(received.get(k)).append('\n');
        synchronized (rtt) {
            for (int i = 0; i < nrtt[0]; i++) out.append("rtt ").append(rtt[0][i]).append('\n');
        }
        out.append("end\n");
        System.out.print(out);
        System.out.flush();
        lc.close();
    }

    static void latRecv(String url, String chan, final int count, long maxMs) throws Exception {
        LCM lc = new LCM(url);
        final long[] lat = new long[count];
        final int[] n = {0};
        final boolean[] stop = {false};
        lc.subscribe(chan, new LCMSubscriber() {
            public void messageReceived(LCM l, String channel, LCMDataInputStream ins) {
                long now = System.nanoTime();
                try {
                    byte[] h = head(ins, 16);
                    synchronized (stop) {
                        if (h.length >= 16 && n[0] < count) lat[n[0]++] = now - stamp(h, 8);
                        if (h.length < 16 || n[0] >= count) {
                            stop[0] = true;
                            stop.notifyAll();
                        }
                    }
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            }
        });
        System.out.println("ready");
        System.out.flush();
        long deadline = System.nanoTime() + maxMs * 1_000_000L;
        StringBuilder out = new StringBuilder();
        synchronized (stop) {
            while (!stop[0]) {
                long left = (deadline - System.nanoTime()) / 1_000_000L;
                if (left <= 0) break;
                stop.wait(left);
            }
            out.append("recv ").append(n[0]).append('\n');
            for (int i = 0; i < n[0]; i++) out.append("lat ").append(lat[i]).append('\n');
        }
        out.append("end\n");
        System.out.print(out);
        System.out.flush();
        lc.close();
    }

    static void latSend(String url, String chan, int count, double hz, int size) throws Exception {
        LCM lc = new LCM(url);
        byte[] msg = new byte[Math.max(size, 16)];
        long period = (long) (1e9 / hz);
        long t = System.nanoTime() + period;
        for (int i = 0; i < count; i++) {
            sleepUntil(t);
            put(msg, 0, i);
            put(msg, 8, System.nanoTime());
            lc.publish(chan, msg, 0, msg.length);
            t += period;
        }
        for (int i = 0; i < 3; i++) {
            sleepUntil(System.nanoTime() + 5_000_000L);
            lc.publish(chan, new byte[8], 0, 8);
        }
        System.out.println("sent " + count);
        System.out.flush();
        lc.close();
    }

    public static void main(String[] a) throws Exception {
        String role = a.length > 0 ? a[0] : "";
        if (role.equals("echo-client") && a.length == 5) {
            echoClient(a[1], a[2], a[3], Long.parseLong(a[4]));
        } else if (role.equals("echo-source") && a.length == 8) {
            echoSource(a[1], a[2], a[3], Integer.parseInt(a[4]), Double.parseDouble(a[5]), Long.parseLong(a[6]),
                    Long.parseLong(a[7]));
        } else if (role.equals("lat-recv") && a.length == 5) {
            latRecv(a[1], a[2], Integer.parseInt(a[3]), Long.parseLong(a[4]));
        } else if (role.equals("lat-send") && a.length == 6) {
            latSend(a[1], a[2], Integer.parseInt(a[3]), Double.parseDouble(a[4]), Integer.parseInt(a[5]));
        } else {
            System.err.println("Roles: unknown role or arguments (see the class comment)");
            System.exit(2);
        }
        // LCM's jar keeps non-daemon threads; the role is done.
        System.exit(0);
    }
}
