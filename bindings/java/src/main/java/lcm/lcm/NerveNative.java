package lcm.lcm;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.List;

/**
 * The native methods over Nerve's bus (libnerve_java, bindings/java/native), and where the library is found.
 *
 * <p>Looked for, in order: the file the system property {@code nerve.jni.library} names; the file the environment
 * variable {@code NERVE_JNI_LIBRARY} names; {@code libnerve_java.so} on {@code java.library.path}; then beside
 * the jar, in {@code ../../lib} (an installed {@code PREFIX/share/java/lcm.jar} finds {@code PREFIX/lib}) and in
 * the jar's own directory. So an installed jar needs no setting at all.
 */
final class NerveNative {
    private static final String NAME = "nerve_java";
    private static final Throwable LOAD_FAILURE = load();

    private NerveNative() {}

    private static Throwable load() {
        List<String> tried = new ArrayList<String>();
        String[] explicit = {System.getProperty("nerve.jni.library"), System.getenv("NERVE_JNI_LIBRARY")};
        for (String path : explicit) {
            if (path != null && !path.isEmpty()) {
                // Named explicitly: a failure is the answer, not a reason to pick up another copy.
                try {
                    System.load(new File(path).getAbsolutePath());
                    return null;
                } catch (Throwable t) {
                    return t;
                }
            }
        }
        try {
            System.loadLibrary(NAME);
            return null;
        } catch (Throwable t) {
            tried.add("java.library.path (" + System.getProperty("java.library.path") + "): " + t.getMessage());
        }
        File jarDir = jarDirectory();
        if (jarDir != null) {
            String file = System.mapLibraryName(NAME);
            File[] candidates = {new File(jarDir, "../../lib/" + file), new File(jarDir, file)};
            for (File f : candidates) {
                if (f.isFile()) {
                    try {
                        System.load(f.getCanonicalPath());
                        return null;
                    } catch (Throwable t) {
                        tried.add(f + ": " + t.getMessage());
                    }
                } else {
                    tried.add(f + ": not there");
                }
            }
        }
        return new UnsatisfiedLinkError("Nerve's native library (" + System.mapLibraryName(NAME)
                + ") was not found; tried " + tried + ". Set -Dnerve.jni.library=/path/to/"
                + System.mapLibraryName(NAME) + " (or NERVE_JNI_LIBRARY), or install with scripts/install-java");
    }

    private static File jarDirectory() {
        try {
            CodeSource source = NerveNative.class.getProtectionDomain().getCodeSource();
            if (source == null || source.getLocation() == null) {
                return null;
            }
            File jar = new File(source.getLocation().toURI());
            return jar.isFile() ? jar.getParentFile() : jar;
        } catch (URISyntaxException | SecurityException | IllegalArgumentException e) {
            return null;
        }
    }

    /** Throws, as an {@link IOException} (what {@code new LCM(...)} declares), why the library did not load. */
    static void ensureLoaded() throws IOException {
        if (LOAD_FAILURE != null) {
            throw new IOException(LOAD_FAILURE.getMessage(), LOAD_FAILURE);
        }
    }

    static native long open(String url) throws IOException;

    static native void close(long bus);

    static native void publish(long bus, String channel, byte[] data, int offset, int length) throws IOException;

    static native void subscribe(long bus, String regex, long id);

    static native void unsubscribe(long bus, long id);

    /** 1 when a message was handled, 0 on timeout, -1 once the bus can receive nothing more. */
    static native int handle(long bus, int timeoutMs) throws IOException;

    /** Called by {@link #handle} for each message and each subscription it is for. */
    static void deliver(long id, String channel, byte[] data) {
        LCM.deliver(id, channel, data);
    }
}
