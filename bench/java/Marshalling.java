import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;

import lcm.lcm.LCMDataInputStream;
import lcm.lcm.LCMDataOutputStream;
import lcm.lcm.LCMEncodable;

/**
 * The Java rows of the marshalling bench (bench/README.md): Nerve's generated classes (package prefix nervegen)
 * against lcm-gen's (prefix lcmgen), in one JVM, on LCM's own lcm.jar.
 *
 *     java Marshalling ROUNDS QUICK NAME TYPE FILE [NAME TYPE FILE ...]
 *
 * Every case is verified first: each system decodes the reference bytes and re-encodes them to the same bytes, or
 * the program prints {"error": ...} and exits 1. Then, round after round, each (case, metric) is timed for one
 * system and then the other, so the two sides of a ratio are timed moments apart, and one line
 * {"round", "case", "system", "metric", "ns"} is printed per timing: the median time of one operation. encode is
 * {@code msg.encode(out)} into a reset, warm LCMDataOutputStream (what LCM.publish does, without its allocation);
 * decode is {@code new T(new LCMDataInputStream(bytes))} (what a subscriber does with the stream LCM hands it).
 */
public final class Marshalling {
    interface Op {
        Object run() throws Exception;
    }

    static volatile Object sink;

    static double measure(Op op, boolean quick) throws Exception {
        int batch = 1;
        while (true) {
            long t0 = System.nanoTime();
            for (int i = 0; i < batch; i++) sink = op.run();
            if (System.nanoTime() - t0 >= 20_000 || batch >= 1 << 24) break;
            batch *= 2;
        }
        long warm = System.nanoTime() + (quick ? 20_000_000L : 200_000_000L);
        while (System.nanoTime() < warm) {
            for (int i = 0; i < batch; i++) sink = op.run();
        }
        int maxSamples = quick ? 5 : 201, minSamples = quick ? 3 : 11;
        long budget = quick ? 2_000_000L : 40_000_000L;
        double[] s = new double[maxSamples];
        int n = 0;
        long start = System.nanoTime();
        while (n < maxSamples && (n < minSamples || System.nanoTime() - start < budget)) {
            long t0 = System.nanoTime();
            for (int i = 0; i < batch; i++) sink = op.run();
            s[n++] = (double) (System.nanoTime() - t0) / batch;
        }
        Arrays.sort(s, 0, n);
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    static final String[] SYSTEMS = {"nerve-java", "lcm-java"};
    static final String[] PREFIXES = {"nervegen", "lcmgen"};

    public static void main(String[] args) throws Exception {
        int rounds = Integer.parseInt(args[0]);
        boolean quick = Boolean.parseBoolean(args[1]);
        int ncases = (args.length - 2) / 3;
        String[] names = new String[ncases];
        Op[][][] ops = new Op[ncases][2][2];
        for (int c = 0; c < ncases; c++) {
            names[c] = args[2 + 3 * c];
            String type = args[3 + 3 * c];
            final byte[] data = Files.readAllBytes(Paths.get(args[4 + 3 * c]));
            for (int s = 0; s < 2; s++) {
                final Class<?> cls = Class.forName(PREFIXES[s] + "." + type);
                final java.lang.reflect.Constructor<?> ctor = cls.getConstructor(java.io.DataInput.class);
                final LCMEncodable msg;
                final LCMDataOutputStream out = new LCMDataOutputStream(data.length);
                try {
                    msg = (LCMEncodable) ctor.newInstance(new LCMDataInputStream(data));
                    msg.encode(out);
                } catch (Exception e) {
                    System.out.println("{\"error\": \"" + SYSTEMS[s] + " " + names[c] + ": " + e + "\"}");
                    System.exit(1);
                    return;
                }
                if (!Arrays.equals(out.toByteArray(), data)) {
                    System.out.println("{\"error\": \"" + SYSTEMS[s] + " " + names[c]
                            + ": decode then encode does not give the reference bytes back\"}");
                    System.exit(1);
                }
                ops[c][s][0] = () -> {
                    out.reset();
                    msg.encode(out);
                    return out;
                };
                ops[c][s][1] = decoder(cls, data);
            }
        }
        System.out.println("{\"ready\": true}");
        String[] metrics = {"encode", "decode"};
        for (int r = 0; r < rounds; r++) {
            for (int c = 0; c < ncases; c++) {
                for (int m = 0; m < 2; m++) {
                    for (int s = 0; s < 2; s++) {
                        double ns = measure(ops[c][s][m], quick);
                        System.out.println("{\"round\": " + r + ", \"case\": \"" + names[c] + "\", \"system\": \""
                                + SYSTEMS[s] + "\", \"metric\": \"" + metrics[m] + "\", \"ns\": " + ns + "}");
                    }
                }
            }
        }
    }

    /** The decode operation through the class's own constructor (a direct call, as user code makes it). */
    static Op decoder(Class<?> cls, byte[] data) throws Exception {
        final java.lang.invoke.MethodHandle h = java.lang.invoke.MethodHandles.publicLookup()
                .findConstructor(cls, java.lang.invoke.MethodType.methodType(void.class, java.io.DataInput.class))
                .asType(java.lang.invoke.MethodType.methodType(Object.class, java.io.DataInput.class));
        return () -> {
            try {
                return h.invokeExact((java.io.DataInput) new LCMDataInputStream(data));
            } catch (IOException | RuntimeException e) {
                throw e;
            } catch (Throwable t) {
                throw new RuntimeException(t);
            }
        };
    }
}
