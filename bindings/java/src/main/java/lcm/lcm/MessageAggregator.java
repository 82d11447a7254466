package lcm.lcm;

import java.util.ArrayDeque;

/**
 * A subscriber that queues what it receives, for a caller to take with {@link #getNextMessage(long)}: how MATLAB
 * (and any program that would rather poll than be called back) reads messages.
 *
 * <p>The queue is bounded by a message count ({@link #setMaxMessages}, unbounded by default) and a total size
 * ({@link #setMaxBufferSize}, 100 MiB by default); past either, the oldest messages are dropped.
 */
public class MessageAggregator implements LCMSubscriber {
    /** A received message. */
    public class Message {
        /** The message's bytes (fingerprint first, for LCM types). */
        public final byte[] data;
        /** The channel it came on. */
        public final String channel;

        /** A message with these bytes from {@code channel}. */
        public Message(String channel, byte[] data) {
            this.channel = channel;
            this.data = data;
        }
    }

    private final ArrayDeque<Message> messages = new ArrayDeque<Message>();
    private long queuedBytes = 0;
    private long maxBytes = 100L << 20;
    private int maxMessages = Integer.MAX_VALUE;

    /** Queues the message (called by {@link LCM} on its reader thread). */
    public synchronized void messageReceived(LCM lcm, String channel, LCMDataInputStream ins) {
        byte[] data = new byte[ins.available()];
        System.arraycopy(ins.getBuffer(), ins.getBufferOffset(), data, 0, data.length);
        ins.skipBytes(data.length);
        messages.addLast(new Message(channel, data));
        queuedBytes += data.length;
        trim();
        notifyAll();
    }

    private void trim() {
        while (!messages.isEmpty() && (queuedBytes > maxBytes || messages.size() > maxMessages)) {
            queuedBytes -= messages.removeFirst().data.length;
        }
    }

    /** Sets the most bytes the queued messages may hold; the oldest go first beyond it. */
    public synchronized void setMaxBufferSize(long bytes) {
        maxBytes = bytes;
        trim();
    }

    /** The most bytes the queued messages may hold. */
    public synchronized long getMaxBufferSize() {
        return maxBytes;
    }

    /** Sets the most messages that may wait; the oldest go first beyond it. */
    public synchronized void setMaxMessages(int count) {
        maxMessages = count;
        trim();
    }

    /** The most messages that may wait. */
    public synchronized int getMaxMessages() {
        return maxMessages;
    }

    /**
     * The oldest waiting message, waiting for one up to {@code timeoutMs} milliseconds: 0 does not wait, a
     * negative timeout waits for as long as it takes. {@code null} if none came in time (or the wait was
     * interrupted, in which case the thread's interrupt flag is set again).
     */
    public synchronized Message getNextMessage(long timeoutMs) {
        long deadline = System.nanoTime() + Math.max(0, timeoutMs) * 1_000_000L;
        while (messages.isEmpty()) {
            long left = timeoutMs < 0 ? 0 : (deadline - System.nanoTime()) / 1_000_000L;
            if (timeoutMs >= 0 && left <= 0) {
                return null;
            }
            try {
                wait(timeoutMs < 0 ? 0 : left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }
        Message m = messages.removeFirst();
        queuedBytes -= m.data.length;
        return m;
    }

    /** The oldest waiting message, waiting for one as long as it takes. */
    public synchronized Message getNextMessage() {
        return getNextMessage(-1);
    }

    /** How many messages are waiting. */
    public synchronized int numMessagesAvailable() {
        return messages.size();
    }
}
