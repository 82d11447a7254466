package lcm.lcm;

import java.io.DataInput;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;

/**
 * Reads big-endian values from a byte array, as LCM's wire format needs: what generated classes decode from.
 *
 * <p>Every read is bounds-checked: asking for more bytes than remain throws {@link EOFException} (an
 * {@link IOException}) and leaves the position where it was, so truncated or hostile input is an exception, never
 * a value read from outside the message.
 */
public final class LCMDataInputStream implements DataInput {
    private final byte[] buf;
    private final int start;
    private final int end;
    private int pos;

    /** Reads all of {@code buf}. */
    public LCMDataInputStream(byte[] buf) {
        this(buf, 0, buf.length);
    }

    /** Reads {@code len} bytes of {@code buf} from {@code offset}. */
    public LCMDataInputStream(byte[] buf, int offset, int len) {
        if (offset < 0 || len < 0 || offset > buf.length - len) {
            throw new IndexOutOfBoundsException(
                    "offset " + offset + ", length " + len + " in an array of " + buf.length);
        }
        this.buf = buf;
        this.start = offset;
        this.pos = offset;
        this.end = offset + len;
    }

    private int take(int n) throws EOFException {
        if (n < 0 || n > end - pos) {
            throw new EOFException("LCMDataInputStream: " + n + " bytes needed, " + available() + " left");
        }
        int at = pos;
        pos += n;
        return at;
    }

    /** Bytes left to read. */
    public int available() {
        return end - pos;
    }

    /** Does nothing (there is nothing to release). */
    public void close() {}

    /** Goes back to the first byte. */
    public void reset() {
        pos = start;
    }

    public boolean readBoolean() throws IOException {
        return buf[take(1)] != 0;
    }

    public byte readByte() throws IOException {
        return buf[take(1)];
    }

    public int readUnsignedByte() throws IOException {
        return buf[take(1)] & 0xff;
    }

    public char readChar() throws IOException {
        return (char) readShort();
    }

    public short readShort() throws IOException {
        int i = take(2);
        return (short) (((buf[i] & 0xff) << 8) | (buf[i + 1] & 0xff));
    }

    public int readUnsignedShort() throws IOException {
        return readShort() & 0xffff;
    }

    public int readInt() throws IOException {
        int i = take(4);
        return ((buf[i] & 0xff) << 24) | ((buf[i + 1] & 0xff) << 16) | ((buf[i + 2] & 0xff) << 8) | (buf[i + 3] & 0xff);
    }

    public long readLong() throws IOException {
        long hi = readInt() & 0xffffffffL;
        return (hi << 32) | (readInt() & 0xffffffffL);
    }

    public float readFloat() throws IOException {
        return Float.intBitsToFloat(readInt());
    }

    public double readDouble() throws IOException {
        return Double.longBitsToDouble(readLong());
    }

    public void readFully(byte[] b) throws IOException {
        readFully(b, 0, b.length);
    }

    public void readFully(byte[] b, int off, int len) throws IOException {
        if (off < 0 || len < 0 || off > b.length - len) {
            throw new IndexOutOfBoundsException("offset " + off + ", length " + len + " in an array of " + b.length);
        }
        System.arraycopy(buf, take(len), b, off, len);
    }

    /** Reads {@code c.length} bytes, one char each (its high byte zero). */
    public void readFullyBytesAsChars(char[] c) throws IOException {
        int i = take(c.length);
        for (int k = 0; k < c.length; k++) {
            c[k] = (char) (buf[i + k] & 0xff);
        }
    }

    /** Reads 8-bit characters up to a zero byte (consumed, not returned), as LCM's jar does. */
    public String readLine() throws IOException {
        return readStringZ();
    }

    /** Reads 8-bit characters up to a zero byte (consumed, not returned); {@link EOFException} if there is none. */
    public String readStringZ() throws IOException {
        int zero = pos;
        while (zero < end && buf[zero] != 0) {
            zero++;
        }
        if (zero == end) {
            throw new EOFException("LCMDataInputStream: no terminating zero in the " + available() + " bytes left");
        }
        char[] c = new char[zero - pos];
        readFullyBytesAsChars(c);
        pos++; // the zero
        return new String(c);
    }

    /** Reads a string in {@link DataInput}'s modified UTF-8 (a 2-byte length, then the bytes). */
    public String readUTF() throws IOException {
        return DataInputStream.readUTF(this);
    }

    /** Skips up to {@code n} bytes; how many were skipped. */
    public int skipBytes(int n) {
        int skip = Math.max(0, Math.min(n, available()));
        pos += skip;
        return skip;
    }

    /** The array being read (not a copy). */
    public byte[] getBuffer() {
        return buf;
    }

    /** The index in {@link #getBuffer()} of the next byte to read. */
    public int getBufferOffset() {
        return pos;
    }
}
