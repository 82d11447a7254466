import java.io.BufferedReader;
import java.io.EOFException;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import exlcm.laser_t;
import exlcm.path_t;
import exlcm.waypoint_t;
import lcm.lcm.LCM;
import lcm.lcm.LCMDataInputStream;
import lcm.lcm.LCMSubscriber;
import lcm.lcm.MessageAggregator;
import lcm.logging.Log;

/**
 * An LCM program written the way LCM's Java users write them, against LCM's own lcm.jar and lcm-gen's classes
 * (exlcm.laser_t, exlcm.path_t of examples/types): tests/interop/test_java.py compiles it once, against LCM's jar,
 * and runs the same class files on LCM's jar and on Nerve's.
 *
 * <pre>
 *   selftest LOG_IN LOG_OUT   publish and receive its own messages on LCM.getSingleton() (LCM_DEFAULT_URL), read
 *                             LOG_IN with lcm.logging.Log ("-": none), write LOG_OUT, then try each misuse
 *   peer OUT IN COUNT         subscribe to IN_*, say READY, wait for a line on stdin, publish COUNT laser_t and
 *                             path_t on OUT_LASER / OUT_PATH, and wait for COUNT of each from IN
 *   echo-server               publish every message of ECHO_REQ back on ECHO_RSP (until killed)
 *   echo-client RATE SECONDS SIZE
 *                             publish SIZE-byte requests at RATE a second for SECONDS, and print how many came back
 *                             and the median round trip (LCM's paper's echo test)
 * </pre>
 *
 * Message i of each type has values computed from i (laser(i), path(i)); every received one is checked against
 * them, field by field.
 */
public class LcmPeer {
    static laser_t laser(int i) {
        laser_t m = new laser_t();
        m.utime = 1000000L + i;
        m.nranges = i % 5 + 1;
        m.ranges = new float[m.nranges];
        for (int k = 0; k < m.nranges; k++) {
            m.ranges[k] = k * 0.5f + i;
        }
        m.rad0 = -1.5f;
        m.radstep = 0.25f * i;
        return m;
    }

    static path_t path(int i) {
        path_t m = new path_t();
        m.timestamp = 2000000L + i;
        m.num_waypoints = i % 3;
        m.waypoints = new waypoint_t[m.num_waypoints];
        for (int k = 0; k < m.num_waypoints; k++) {
            waypoint_t w = new waypoint_t();
            w.id = "wp" + i + "_" + k;
            w.position = new float[] {k, -k - 0.5f};
            m.waypoints[k] = w;
        }
        return m;
    }

    static boolean same(laser_t a, laser_t b) {
        return a.utime == b.utime && a.nranges == b.nranges && Arrays.equals(a.ranges, b.ranges) && a.rad0 == b.rad0
                && a.radstep == b.radstep;
    }

    static boolean same(path_t a, path_t b) {
        if (a.timestamp != b.timestamp || a.num_waypoints != b.num_waypoints) {
            return false;
        }
        for (int k = 0; k < a.num_waypoints; k++) {
            if (!a.waypoints[k].id.equals(b.waypoints[k].id)
                    || !Arrays.equals(a.waypoints[k].position, b.waypoints[k].position)) {
                return false;
            }
        }
        return true;
    }

    /** Decodes and checks every laser_t and path_t it is given; remembers which indices came. */
    static class Checker implements LCMSubscriber {
        final Set<String> got = new HashSet<String>();
        int bad = 0;

        public synchronized void messageReceived(LCM lcm, String channel, LCMDataInputStream ins) {
            try {
                if (channel.endsWith("_LASER")) {
                    laser_t m = new laser_t(ins);
                    int i = (int) (m.utime - 1000000L);
                    record(same(m, laser(i)), "laser " + i, channel);
                } else if (channel.endsWith("_PATH")) {
                    path_t m = new path_t(ins);
                    int i = (int) (m.timestamp - 2000000L);
                    record(same(m, path(i)), "path " + i, channel);
                }
            } catch (IOException e) {
                bad++;
                System.out.println("BAD " + channel + " " + e);
            }
            notifyAll();
        }

        private void record(boolean ok, String what, String channel) {
            if (ok) {
                if (got.add(what)) {
                    System.out.println("GOT " + what + " on " + channel);
                }
            } else {
                bad++;
                System.out.println("BAD " + what + " on " + channel);
            }
        }

        synchronized boolean await(int count, long timeoutMs) throws InterruptedException {
            long end = System.currentTimeMillis() + timeoutMs;
            while (got.size() < 2 * count && System.currentTimeMillis() < end) {
                wait(Math.max(1, end - System.currentTimeMillis()));
            }
            return got.size() == 2 * count && bad == 0;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 3 && args[0].equals("selftest")) {
            selftest(args[1], args[2]);
        } else if (args.length == 4 && args[0].equals("peer")) {
            peer(args[1], args[2], Integer.parseInt(args[3]));
        } else if (args.length == 1 && args[0].equals("echo-server")) {
            echoServer();
        } else if (args.length == 4 && args[0].equals("echo-client")) {
            echoClient(Integer.parseInt(args[1]), Double.parseDouble(args[2]), Integer.parseInt(args[3]));
        } else {
            System.err.println("usage: LcmPeer selftest LOG_IN LOG_OUT | peer OUT IN COUNT | echo-server"
                    + " | echo-client RATE SECONDS SIZE");
            System.exit(2);
        }
    }

    static void publishAll(LCM lcm, String prefix, int count) throws InterruptedException {
        for (int i = 0; i < count; i++) {
            lcm.publish(prefix + "_LASER", laser(i));
            lcm.publish(prefix + "_PATH", path(i));
            Thread.sleep(2);
        }
    }

    static void peer(String out, String in, int count) throws Exception {
        LCM lcm = LCM.getSingleton();
        Checker checker = new Checker();
        lcm.subscribe(in + "_.*", checker);
        System.out.println("READY");
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in)).readLine();
        publishAll(lcm, out, count);
        boolean ok = checker.await(count, 20000);
        System.out.println("PEER " + (ok ? "OK" : "FAILED") + " got " + checker.got.size() + " bad " + checker.bad);
        System.exit(ok ? 0 : 1);
    }

    static void echoServer() throws Exception {
        LCM lcm = LCM.getSingleton();
        lcm.subscribe("ECHO_REQ", new LCMSubscriber() {
            public void messageReceived(LCM l, String channel, LCMDataInputStream ins) {
                try {
                    l.publish("ECHO_RSP", ins.getBuffer(), ins.getBufferOffset(), ins.available());
                } catch (IOException e) {
                    System.out.println("ECHO publish failed: " + e);
                }
            }
        });
        System.out.println("READY");
        System.out.flush();
        while (true) {
            Thread.sleep(1000);
        }
    }

    static void echoClient(int rate, double seconds, int size) throws Exception {
        LCM lcm = LCM.getSingleton();
        final int count = (int) (rate * seconds);
        final long[] rtt = new long[count];
        final int[] got = {0};
        lcm.subscribe("ECHO_RSP", new LCMSubscriber() {
            public void messageReceived(LCM l, String channel, LCMDataInputStream ins) {
                try {
                    int seq = ins.readInt();
                    long sent = ins.readLong();
                    if (seq >= 0 && seq < count && rtt[seq] == 0) {
                        rtt[seq] = System.nanoTime() - sent;
                        synchronized (got) {
                            got[0]++;
                        }
                    }
                } catch (IOException e) {
                    System.out.println("ECHO bad reply: " + e);
                }
            }
        });
        byte[] buf = new byte[Math.max(size, 12)];
        long period = 1000000000L / rate;
        long start = System.nanoTime();
        for (int i = 0; i < count; i++) {
            long slot = start + i * period;
            while (System.nanoTime() < slot) {
                java.util.concurrent.locks.LockSupport.parkNanos(Math.min(slot - System.nanoTime(), 200000));
            }
            lcm.publish("ECHO_REQ", encodeRequest(buf, i, System.nanoTime()), 0, buf.length);
        }
        Thread.sleep(500); // the last replies
        long[] done;
        synchronized (got) {
            done = new long[got[0]];
        }
        int n = 0;
        for (long r : rtt) {
            if (r != 0 && n < done.length) {
                done[n++] = r;
            }
        }
        Arrays.sort(done, 0, n);
        System.out.println("ECHO rate " + rate + " sent " + count + " got " + n + " p50_us "
                + (n == 0 ? -1 : done[n / 2] / 1000));
        System.exit(0);
    }

    static byte[] encodeRequest(byte[] buf, int seq, long now) {
        for (int k = 0; k < 4; k++) {
            buf[k] = (byte) (seq >>> (24 - 8 * k));
        }
        for (int k = 0; k < 8; k++) {
            buf[4 + k] = (byte) (now >>> (56 - 8 * k));
        }
        return buf;
    }

    static void selftest(String logIn, String logOut) throws Exception {
        final int count = 5;
        LCM lcm = LCM.getSingleton();
        Checker checker = new Checker();
        MessageAggregator aggregator = new MessageAggregator();
        lcm.subscribe("SELF_.*", checker);
        lcm.subscribe("SELF_PATH", aggregator);
        publishAll(lcm, "SELF", count);
        boolean ok = checker.await(count, 10000);
        System.out.println("SELF " + (ok ? "OK" : "FAILED") + " got " + checker.got.size());
        int aggregated = 0;
        for (MessageAggregator.Message m; (m = aggregator.getNextMessage(ok ? 1000 : 0)) != null; ) {
            path_t p = new path_t(m.data);
            ok &= m.channel.equals("SELF_PATH") && same(p, path(aggregated));
            if (++aggregated == count) {
                break;
            }
        }
        System.out.println("AGGREGATED " + aggregated);
        ok &= aggregated == count;

        if (!logIn.equals("-")) {
            Log log = new Log(logIn, "r");
            int events = 0;
            try {
                for (Log.Event e; (e = log.readNext()) != null; events++) {
                    int i = events / 2;
                    boolean match = e.eventNumber == events && e.utime == 5000000L + events
                            && (events % 2 == 0
                                    ? e.channel.equals("LOG_LASER") && same(new laser_t(e.data), laser(i))
                                    : e.channel.equals("LOG_PATH") && same(new path_t(e.data), path(i)));
                    ok &= match;
                }
            } catch (EOFException end) {
                // The end of the log.
            }
            log.close();
            System.out.println("LOGREAD " + events);
            ok &= events == 2 * count;
        }
        Log log = new Log(logOut, "rw");
        for (int i = 0; i < count; i++) {
            log.write(5000000L + 2 * i, "LOG_LASER", laser(i));
            log.write(5000000L + 2 * i + 1, "LOG_PATH", path(i));
        }
        log.close();

        misuse(lcm, new File(logOut).getParentFile());
        System.out.println("SELFTEST " + (ok ? "OK" : "FAILED"));
        System.exit(ok ? 0 : 1);
    }

    interface Case {
        void run() throws Throwable;
    }

    static void attempt(String name, Case c) {
        String outcome;
        try {
            c.run();
            outcome = "none";
        } catch (Throwable t) {
            outcome = t.getClass().getName();
        }
        System.out.println("MISUSE " + name + " " + outcome);
    }

    static void misuse(final LCM lcm, final File dir) throws Exception {
        final byte[] good = encode(laser(3));
        attempt("publish_null_channel", () -> lcm.publish(null, laser(1)));
        attempt("publish_bytes_null_channel", () -> lcm.publish(null, good, 0, good.length));
        attempt("publish_bytes_bad_range", () -> lcm.publish("MISUSE", good, 2, good.length));
        attempt("subscribe_bad_regex", () -> lcm.subscribe("(", new MessageAggregator()));
        attempt("decode_garbage", () -> new laser_t(new byte[] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
        attempt("decode_truncated", () -> new laser_t(Arrays.copyOf(good, good.length - 3)));
        attempt("decode_empty", () -> new path_t(new byte[0]));
        attempt("stringz_unterminated", () -> new LCMDataInputStream(new byte[] {65, 66}).readStringZ());
        attempt("unknown_url", () -> new LCM("bogus://nowhere").close());
        final LCM closed = new LCM(LCM.getDefaultURL());
        closed.close();
        attempt("closed_publish", () -> closed.publish("MISUSE", laser(1)));
        attempt("closed_publish_bytes", () -> closed.publish("MISUSE", good, 0, good.length));
        attempt("closed_subscribe", () -> closed.subscribe("MISUSE", new MessageAggregator()));
        attempt("closed_unsubscribe", () -> closed.unsubscribe("MISUSE", null));
        attempt("closed_close", () -> closed.close());
        final File garbage = new File(dir, "garbage.lcmlog");
        FileOutputStream f = new FileOutputStream(garbage);
        byte[] noise = new byte[4096];
        new java.util.Random(7).nextBytes(noise);
        f.write(noise);
        f.close();
        // A handle no bus has (what a program reaching past the API could pass): an exception, not a crash.
        final long junk = 0x5eed5eed5eedL;
        attempt("native_garbage_publish", () -> callNative("publish",
                new Class<?>[] {long.class, String.class, byte[].class, int.class, int.class}, junk, "X", good, 0, 1));
        attempt("native_garbage_subscribe", () -> callNative("subscribe",
                new Class<?>[] {long.class, String.class, long.class}, junk, "X", 1L));
        attempt("native_garbage_unsubscribe", () -> callNative("unsubscribe",
                new Class<?>[] {long.class, long.class}, junk, 1L));
        attempt("native_garbage_handle", () -> callNative("handle", new Class<?>[] {long.class, int.class}, junk, 10));
        attempt("native_garbage_close", () -> callNative("close", new Class<?>[] {long.class}, junk));
        attempt("native_bad_url", () -> callNative("open", new Class<?>[] {String.class}, "udpm://1.2.3"));
        // A live bus's handle with null or out-of-range arguments (the jar checks them first; the native side must
        // too): an exception, not a crash. On LCM's jar there is no native class, so no handle either.
        long opened = 0;
        try {
            opened = (Long) callNative("open", new Class<?>[] {String.class}, "memq://");
        } catch (Throwable t) {
            // LCM's jar: every native_ case below is its ClassNotFoundException.
        }
        final long live = opened;
        final Class<?>[] publishTypes = {long.class, String.class, byte[].class, int.class, int.class};
        attempt("native_null_data", () -> callNative("publish", publishTypes, live, "X", null, 0, 0));
        attempt("native_null_channel", () -> callNative("publish", publishTypes, live, null, good, 0, 1));
        attempt("native_bad_range", () -> callNative("publish", publishTypes, live, "X", good, 5, good.length));
        attempt("native_negative_length", () -> callNative("publish", publishTypes, live, "X", good, 0, -1));
        attempt("native_null_regex", () -> callNative("subscribe",
                new Class<?>[] {long.class, String.class, long.class}, live, null, 1L));
        attempt("native_negative_timeout", () -> callNative("handle", new Class<?>[] {long.class, int.class}, live, -1));
        if (live != 0) attempt("native_close_live", () -> callNative("close", new Class<?>[] {long.class}, live));
        attempt("log_garbage", () -> {
            Log log = new Log(garbage.getPath(), "r");
            try {
                log.readNext();
            } finally {
                log.close();
            }
        });
    }

    /** Calls a static method of Nerve's native class by reflection (LCM's jar has none: ClassNotFoundException). */
    static Object callNative(String name, Class<?>[] types, Object... args) throws Throwable {
        java.lang.reflect.Method m = Class.forName("lcm.lcm.NerveNative").getDeclaredMethod(name, types);
        m.setAccessible(true);
        try {
            return m.invoke(null, args);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        }
    }

    static byte[] encode(laser_t m) throws IOException {
        lcm.lcm.LCMDataOutputStream outs = new lcm.lcm.LCMDataOutputStream();
        m.encode(outs);
        return outs.toByteArray();
    }
}
