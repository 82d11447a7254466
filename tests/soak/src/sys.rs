//! The few OS calls the soak needs: the clock every process shares, the allocator's in-use count and a base port.
#![allow(unsafe_code)]

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process of the host, so a stamp taken by a publisher can be
/// subtracted by a subscriber.
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec into the valid local it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Bytes glibc's allocator counts as in use (`mallinfo2`: allocated chunks of every arena, blocks served by `mmap`,
/// and the chunks each thread's cache keeps for reuse, up to 7 of each small size: with 200 receive threads that is
/// megabytes, filling over hours). A leak raises it; so does a thread cache filling up.
pub fn heap_in_use_bytes() -> u64 {
    // SAFETY: mallinfo2 takes nothing and returns a plain struct by value; glibc walks its arenas under their locks.
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks + info.hblkhd) as u64
}

/// A base port for this run, the same one nerve-bench's suites derive from their process id: runs started at the same
/// time (a test and a manual run) use different ports, and the soak's offset from it stays clear of the ranges the
/// bench suites use. Ports stay below the ephemeral range (32768-), so no sender socket's port can be one of them.
pub fn base_port() -> u16 {
    10_000 + (std::process::id() % 10) as u16 * 2_200
}

/// Fixes glibc's mmap threshold at its default (128 KiB), so that every block that large (a 1 MiB message) is
/// mapped on its own and returned to the kernel when freed. Left to itself glibc raises the threshold the first
/// time such a block is freed, and from then on serves them from an arena, where freed ones stay resident in
/// whatever number the traffic last needed: megabytes that come and go with no leak, beside a bar of 1 %.
pub fn fix_mmap_threshold() {
    // SAFETY: mallopt takes two plain integers and changes only the allocator's settings.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024) };
}

/// Returns to the kernel every whole page the allocator holds free, in every arena (`malloc_trim(0)`): a
/// subscriber's queue of messages of mixed sizes leaves freed holes that glibc keeps resident in whatever pattern
/// the last backlog left, hundreds of KiB that come and go with no leak. Memory in use (a leak) stays.
pub fn release_free_pages() {
    // SAFETY: malloc_trim takes a plain integer; glibc walks its arenas under their locks.
    unsafe { libc::malloc_trim(0) };
}
