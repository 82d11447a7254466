package lcm.lcm;

import java.io.IOException;
import java.nio.charset.Charset;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

/**
 * LCM's Java API over Nerve's bus: the class of LCM's own {@code lcm.jar}, with the same methods, so a program
 * written (and compiled) for LCM runs on this jar unchanged, on every transport Nerve's bus has: {@code udpm://}
 * (LCM's multicast, interoperable with every LCM program), {@code shm://} (shared memory), {@code inproc://},
 * {@code memq://}, {@code file://} (event logs) and the rest.
 *
 * <p>Subscribers are called on a reader thread of the {@code LCM} (a daemon thread, one per URL), one call at a
 * time, as in LCM's jar. Each subscription has a queue of 30 messages, from which the oldest is dropped when a
 * subscriber falls that far behind. A process receives its own messages.
 *
 * <p>Misuse is an exception, as in LCM's jar: any call on a closed {@code LCM} throws
 * {@link IllegalStateException}, a null channel {@link NullPointerException}.
 */
public class LCM {
    private static final String LCM_DEFAULT_URL = "udpm://239.255.76.67:7667";
    /** How long a reader thread waits in the bus at a time, so that {@link #close()} is seen that soon. */
    private static final int READER_SLICE_MS = 50;
    /**
     * {@code -Dnerve.poll=true}: reader threads spin on the bus instead of sleeping in it, for the lowest latency
     * at the price of a core per reader (what a polling C or Rust reader pays); off by default, as in LCM's jar.
     */
    private static final boolean POLL = Boolean.getBoolean("nerve.poll");
    private static final Charset ASCII = Charset.forName("US-ASCII");

    /** Every live subscription of every {@code LCM}, by its id (what the native side delivers to). */
    private static final ConcurrentHashMap<Long, Subscription> SUBSCRIPTIONS =
            new ConcurrentHashMap<Long, Subscription>();
    private static final AtomicLong NEXT_ID = new AtomicLong(1);
    private static LCM singleton;

    private static final class Subscription {
        final LCM owner;
        final String regex;
        final Pattern pattern;
        final LCMSubscriber subscriber;
        final long id = NEXT_ID.getAndIncrement();
        volatile boolean live = true;

        Subscription(LCM owner, String regex, Pattern pattern, LCMSubscriber subscriber) {
            this.owner = owner;
            this.regex = regex;
            this.pattern = pattern;
            this.subscriber = subscriber;
        }
    }

    /** One URL's bus and the thread that receives from it. */
    private final class Bus implements Runnable {
        final long handle;
        final String url;
        Thread reader;

        Bus(long handle, String url) {
            this.handle = handle;
            this.url = url;
        }

        synchronized void startReader() {
            if (reader == null) {
                reader = new Thread(this, "LCM reader (" + (url == null ? getDefaultURL() : url) + ")");
                reader.setDaemon(true);
                reader.start();
            }
        }

        synchronized Thread reader() {
            return reader;
        }

        public void run() {
            while (!closed) {
                try {
                    if (NerveNative.handle(handle, POLL ? 0 : READER_SLICE_MS) < 0) {
                        return; // a file:// log played to its end: nothing more will come
                    }
                } catch (Throwable t) {
                    if (closed) {
                        return;
                    }
                    System.err.println("LCM: receiving on " + (url == null ? getDefaultURL() : url) + ": " + t);
                    try {
                        Thread.sleep(READER_SLICE_MS); // an error repeats: do not spin on it
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        }
    }

    private final List<Bus> buses = new ArrayList<Bus>();
    /** The subscriptions of this {@code LCM}; also the lock subscribers are called under. */
    private final List<Subscription> subscriptions = new ArrayList<Subscription>();
    private final LCMDataOutputStream encodeBuffer = new LCMDataOutputStream(new byte[1024]);
    private volatile boolean closed = false;

    /**
     * The URL {@code new LCM()} opens: {@code NERVE_URL}, else {@code LCM_DEFAULT_URL}, else LCM's default
     * multicast group.
     */
    public static String getDefaultURL() {
        for (String name : new String[] {"NERVE_URL", "LCM_DEFAULT_URL"}) {
            String url = System.getenv(name);
            if (url != null && !url.isEmpty()) {
                return url;
            }
        }
        return LCM_DEFAULT_URL;
    }

    /**
     * Opens a bus on each URL (publications go to all of them, subscriptions receive from all of them); with none,
     * or for a null or empty one, the default ({@link #getDefaultURL()}).
     *
     * @throws IOException when a URL is not one the bus takes, a transport cannot start, or Nerve's native
     *     library cannot be loaded
     */
    public LCM(String... urls) throws IOException {
        NerveNative.ensureLoaded();
        if (urls == null || urls.length == 0) {
            urls = new String[] {null};
        }
        try {
            for (String url : urls) {
                String u = url == null || url.isEmpty() ? null : url;
                buses.add(new Bus(NerveNative.open(u), u));
            }
        } catch (IOException | RuntimeException e) {
            for (Bus b : buses) {
                NerveNative.close(b.handle);
            }
            throw e;
        }
    }

    /**
     * The process's shared {@code LCM} on the default URL, made on first use. If that fails the process exits
     * with status -1 after saying why, as with LCM's jar.
     */
    public static synchronized LCM getSingleton() {
        if (singleton == null) {
            try {
                singleton = new LCM();
            } catch (Exception e) {
                System.err.println("LC singleton fail: " + e);
                System.exit(-1);
                return null;
            }
        }
        return singleton;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this LCM is closed");
        }
    }

    /** How many subscriptions this {@code LCM} has. */
    public int getNumSubscriptions() {
        checkOpen();
        synchronized (subscriptions) {
            return subscriptions.size();
        }
    }

    /** Publishes {@code s} as 8-bit characters and a zero byte (for tests, as in LCM's jar). */
    public void publish(String channel, String s) throws IOException {
        checkOpen();
        byte[] b = (s + "\0").getBytes(ASCII);
        publish(channel, b, 0, b.length);
    }

    /**
     * Publishes a message on {@code channel}, on every URL. A transport error is printed (as by LCM's jar, whose
     * signature has no exception for it).
     */
    public synchronized void publish(String channel, LCMEncodable e) {
        checkOpen();
        if (channel == null) {
            throw new NullPointerException("publish: the channel is null");
        }
        if (e == null) {
            throw new NullPointerException("publish: the message is null");
        }
        try {
            encodeBuffer.reset();
            e.encode(encodeBuffer);
            publish(channel, encodeBuffer.getBuffer(), 0, encodeBuffer.size());
        } catch (IOException ex) {
            System.err.println("LC publish fail: " + ex);
        }
    }

    /** Publishes {@code length} bytes of {@code data} from {@code offset} on {@code channel}, on every URL. */
    public synchronized void publish(String channel, byte[] data, int offset, int length) throws IOException {
        checkOpen();
        if (channel == null) {
            throw new NullPointerException("publish: the channel is null");
        }
        if (data == null) {
            throw new NullPointerException("publish: the data is null");
        }
        if (offset < 0 || length < 0 || offset > data.length - length) {
            throw new IndexOutOfBoundsException(
                    "publish: offset " + offset + ", length " + length + " in an array of " + data.length);
        }
        for (Bus b : buses) {
            NerveNative.publish(b.handle, channel, data, offset, length);
        }
    }

    /**
     * Calls {@code sub} for every message on a channel that {@code regex} matches in full ({@code ".*"} for all of
     * them, not {@code "*"}).
     *
     * @throws java.util.regex.PatternSyntaxException if {@code regex} is not a regular expression
     */
    public void subscribe(String regex, LCMSubscriber sub) {
        checkOpen();
        if (regex == null) {
            throw new NullPointerException("subscribe: the channel regex is null");
        }
        if (sub == null) {
            throw new NullPointerException("subscribe: the subscriber is null");
        }
        Subscription s = new Subscription(this, regex, Pattern.compile(regex), sub);
        synchronized (subscriptions) {
            checkOpen();
            SUBSCRIPTIONS.put(s.id, s);
            int done = 0;
            try {
                for (Bus b : buses) {
                    NerveNative.subscribe(b.handle, regex, s.id);
                    done++;
                }
            } catch (RuntimeException e) {
                SUBSCRIPTIONS.remove(s.id);
                for (Bus b : buses.subList(0, done)) {
                    NerveNative.unsubscribe(b.handle, s.id);
                }
                throw e;
            }
            subscriptions.add(s);
        }
        for (Bus b : buses) {
            b.startReader();
        }
    }

    /**
     * Removes the subscriptions of {@code sub} to {@code regex}: a null {@code regex} means all of {@code sub}'s, a
     * null {@code sub} all of {@code regex}'s, both null all of them. None of their messages is delivered after
     * this returns.
     */
    public void unsubscribe(String regex, LCMSubscriber sub) {
        checkOpen();
        synchronized (subscriptions) {
            for (Iterator<Subscription> it = subscriptions.iterator(); it.hasNext(); ) {
                Subscription s = it.next();
                if ((sub == null || s.subscriber == sub) && (regex == null || s.regex.equals(regex))) {
                    it.remove();
                    drop(s);
                }
            }
        }
    }

    private void drop(Subscription s) {
        s.live = false;
        SUBSCRIPTIONS.remove(s.id);
        for (Bus b : buses) {
            NerveNative.unsubscribe(b.handle, s.id);
        }
    }

    /** A message for subscription {@code id}, from a reader thread (of any {@code LCM} on the same bus). */
    static void deliver(long id, String channel, byte[] data) {
        Subscription s = SUBSCRIPTIONS.get(id);
        if (s != null) {
            s.owner.call(s, channel, data, 0, data.length);
        }
    }

    private void call(Subscription s, String channel, byte[] data, int offset, int length) {
        synchronized (subscriptions) {
            if (!s.live || closed) {
                return;
            }
            try {
                s.subscriber.messageReceived(this, channel, new LCMDataInputStream(data, offset, length));
            } catch (RuntimeException e) {
                // The reader thread goes on to the next message, as LCM's would lose no more than this one.
                System.err.println("LCM: the subscriber of " + s.regex + " threw on a message on " + channel + ":");
                e.printStackTrace();
            }
        }
    }

    /**
     * Hands a message to this {@code LCM}'s subscribers whose regular expression matches {@code channel}, on the
     * calling thread (LCM's providers call this; a program has no need to).
     */
    public void receiveMessage(String channel, byte[] data, int offset, int length) {
        checkOpen();
        List<Subscription> matching = new ArrayList<Subscription>();
        synchronized (subscriptions) {
            for (Subscription s : subscriptions) {
                if (s.pattern.matcher(channel).matches()) {
                    matching.add(s);
                }
            }
            for (Subscription s : matching) {
                call(s, channel, data, offset, length);
            }
        }
    }

    /** Subscribes {@code sub} to every channel. */
    public synchronized void subscribeAll(LCMSubscriber sub) {
        subscribe(".*", sub);
    }

    /**
     * Closes every bus this {@code LCM} opened and ends its reader threads; every later call throws
     * {@link IllegalStateException} (so does a second {@code close}).
     */
    public void close() {
        synchronized (this) {
            checkOpen();
            closed = true;
        }
        synchronized (subscriptions) {
            for (Subscription s : subscriptions) {
                s.live = false;
                SUBSCRIPTIONS.remove(s.id);
            }
            subscriptions.clear();
        }
        for (Bus b : buses) {
            NerveNative.close(b.handle);
        }
        // Not under a lock: a subscriber running on a reader thread may be waiting for one (to publish).
        for (Bus b : buses) {
            Thread t = b.reader();
            if (t != null && t != Thread.currentThread()) {
                try {
                    t.join(10L * READER_SLICE_MS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
    }

    /** Prints the channel of every message on the default URL (a quick check that messages arrive). */
    public static void main(String[] args) throws Exception {
        LCM lcm = new LCM(args);
        lcm.subscribeAll(new LCMSubscriber() {
            public void messageReceived(LCM l, String channel, LCMDataInputStream ins) {
                System.out.println("RECV: " + channel + " (" + ins.available() + " bytes)");
            }
        });
        while (true) {
            Thread.sleep(1000);
        }
    }
}
