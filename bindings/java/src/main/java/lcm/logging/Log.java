package lcm.logging;

import java.io.EOFException;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.Charset;

import lcm.lcm.LCMDataOutputStream;
import lcm.lcm.LCMEncodable;

/**
 * Reads and writes LCM event logs (what {@code lcm-logger}, {@code nerve log} and {@code file://} buses write):
 * each event a 28-byte big-endian header (sync word {@code 0xEDA1DA01}, event number, time in microseconds, channel
 * and data lengths), the channel, then the data.
 *
 * <p>Reading resynchronises on the sync word after garbage, as LCM's readers do; a header whose lengths cannot be
 * right (a channel of 0 or 1000 bytes or more, data longer than what is left of the file) is skipped the same way,
 * so a corrupt log is never a huge allocation. The end of the file is an {@link EOFException}.
 */
public class Log {
    private static final int SYNC = 0xEDA1DA01;
    private static final int HEADER = 28;
    private static final int MAX_CHANNEL = 1000;
    private static final Charset UTF8 = Charset.forName("UTF-8");

    /** One event of a log. */
    public static class Event {
        /** When it was received, microseconds since 1970-01-01 00:00 UTC. */
        public long utime;
        /** Its number in the log (0, 1, 2, ... as written). */
        public long eventNumber;
        /** The message's bytes. */
        public byte[] data;
        /** The channel it came on. */
        public String channel;
    }

    private final String path;
    private final RandomAccessFile file;
    private long eventsWritten = 0;

    // One buffer, either of bytes read ahead (from file offset bufStart) or of bytes not yet written (to it).
    private final byte[] buf = new byte[1 << 16];
    private long bufStart = 0;
    private int bufLen = 0;
    private int bufPos = 0;
    private boolean writing = false;

    /**
     * Opens {@code path} with {@code mode} {@code "r"} (read), or {@code "rw"}, {@code "rws"}, {@code "rwd"} (read
     * and write, as {@link RandomAccessFile}: an existing file is written over from its start, not truncated).
     */
    public Log(String path, String mode) throws IOException {
        this.path = path;
        this.file = new RandomAccessFile(path, mode);
    }

    /** The path the log was opened with. */
    public String getPath() {
        return path;
    }

    /** Writes out what is buffered. */
    public synchronized void flush() throws IOException {
        if (writing && bufLen > 0) {
            file.seek(bufStart);
            file.write(buf, 0, bufLen);
            bufStart += bufLen;
            bufLen = 0;
        }
    }

    private long position() {
        return bufStart + (writing ? bufLen : bufPos);
    }

    private void seek(long pos) throws IOException {
        flush();
        writing = false;
        bufStart = pos;
        bufLen = 0;
        bufPos = 0;
    }

    private void toReading() throws IOException {
        if (writing) {
            seek(position());
        }
    }

    /** Reads the next block of the file into the buffer; false at the end of the file. */
    private boolean refill() throws IOException {
        bufStart += bufLen;
        bufPos = 0;
        bufLen = 0;
        file.seek(bufStart);
        int n = file.read(buf, 0, buf.length);
        if (n <= 0) {
            return false;
        }
        bufLen = n;
        return true;
    }

    /** The next byte, or -1 at the end of the file. */
    private int read() throws IOException {
        toReading();
        if (bufPos == bufLen && !refill()) {
            return -1;
        }
        return buf[bufPos++] & 0xff;
    }

    private void readFully(byte[] b) throws IOException {
        toReading();
        for (int i = 0; i < b.length; ) {
            if (bufPos == bufLen && !refill()) {
                throw new EOFException("the log ends inside an event");
            }
            int n = Math.min(b.length - i, bufLen - bufPos);
            System.arraycopy(buf, bufPos, b, i, n);
            bufPos += n;
            i += n;
        }
    }

    private static long readLong(byte[] h, int at) {
        return ((long) readInt(h, at) << 32) | (readInt(h, at + 4) & 0xffffffffL);
    }

    private static int readInt(byte[] h, int at) {
        return ((h[at] & 0xff) << 24) | ((h[at + 1] & 0xff) << 16) | ((h[at + 2] & 0xff) << 8) | (h[at + 3] & 0xff);
    }

    /**
     * Reads the next event.
     *
     * @throws EOFException at the end of the log (or when it ends inside an event)
     */
    public synchronized Event readNext() throws IOException {
        byte[] h = new byte[HEADER - 4];
        while (true) {
            // Fewer than 4 bytes in, the word's top byte is still 0, so it cannot be the sync word yet.
            int word = 0;
            while (word != SYNC) {
                int b = read();
                if (b < 0) {
                    throw new EOFException("end of the log");
                }
                word = (word << 8) | b;
            }
            long afterSync = position();
            readFully(h);
            int channelLen = readInt(h, 16);
            int dataLen = readInt(h, 20);
            long left = file.length() - position();
            if (channelLen <= 0 || channelLen >= MAX_CHANNEL || dataLen < 0 || (long) channelLen + dataLen > left) {
                seek(afterSync); // not an event: look for the next sync word from just past this one
                continue;
            }
            Event e = new Event();
            e.eventNumber = readLong(h, 0);
            e.utime = readLong(h, 8);
            byte[] channel = new byte[channelLen];
            readFully(channel);
            e.channel = new String(channel, UTF8);
            e.data = new byte[dataLen];
            readFully(e.data);
            return e;
        }
    }

    /** How far through the file the next read is, from 0 to 1. */
    public synchronized double getPositionFraction() throws IOException {
        flush();
        long length = Math.max(file.length(), position());
        return length == 0 ? 0 : position() / (double) length;
    }

    /** Moves the next read to {@code fraction} (0 to 1) of the file; it resynchronises on the next event. */
    public synchronized void seekPositionFraction(double fraction) throws IOException {
        flush();
        seek((long) (file.length() * fraction));
    }

    private void put(byte[] b, int off, int len) throws IOException {
        if (!writing) {
            long pos = position();
            seek(pos);
            writing = true;
        }
        while (len > 0) {
            if (bufLen == buf.length) {
                flush();
            }
            int n = Math.min(len, buf.length - bufLen);
            System.arraycopy(b, off, buf, bufLen, n);
            bufLen += n;
            off += n;
            len -= n;
        }
    }

    /** Writes {@code e} at the current position; its event number is the caller's to set. */
    public synchronized void write(Event e) throws IOException {
        if (e == null || e.channel == null || e.data == null) {
            throw new NullPointerException("write: the event, its channel or its data is null");
        }
        byte[] channel = e.channel.getBytes(UTF8);
        if (channel.length == 0 || channel.length >= MAX_CHANNEL) {
            throw new IllegalArgumentException("write: a channel of " + channel.length + " bytes (1 to 999)");
        }
        LCMDataOutputStream h = new LCMDataOutputStream(HEADER);
        h.writeInt(SYNC);
        h.writeLong(e.eventNumber);
        h.writeLong(e.utime);
        h.writeInt(channel.length);
        h.writeInt(e.data.length);
        put(h.getBuffer(), 0, h.size());
        put(channel, 0, channel.length);
        put(e.data, 0, e.data.length);
    }

    /** Writes {@code msg} on {@code channel} at {@code utime}, numbering the events this method writes 0, 1, 2, ... */
    public synchronized void write(long utime, String channel, LCMEncodable msg) throws IOException {
        LCMDataOutputStream outs = new LCMDataOutputStream();
        msg.encode(outs);
        Event e = new Event();
        e.utime = utime;
        e.channel = channel;
        e.data = outs.toByteArray();
        e.eventNumber = eventsWritten;
        write(e);
        eventsWritten++;
    }

    /** Writes out what is buffered and closes the file. */
    public synchronized void close() throws IOException {
        try {
            flush();
        } finally {
            file.close();
        }
    }
}
