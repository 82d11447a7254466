package lcm.lcm;

import java.io.ByteArrayOutputStream;
import java.io.DataOutput;
import java.io.DataOutputStream;
import java.io.IOException;

/** Writes big-endian values into a growing byte array, as LCM's wire format needs: what generated classes encode into. */
public final class LCMDataOutputStream implements DataOutput {
    private byte[] buf;
    private int pos;

    /** An empty stream with room for 512 bytes before it grows. */
    public LCMDataOutputStream() {
        this(512);
    }

    /** An empty stream with room for {@code size} bytes before it grows. */
    public LCMDataOutputStream(int size) {
        this(new byte[size]);
    }

    /** An empty stream that writes into {@code buf} until it needs more room. */
    public LCMDataOutputStream(byte[] buf) {
        this.buf = buf;
    }

    private int room(int n) {
        if (n > buf.length - pos) {
            long want = Math.max((long) pos + n, Math.max(16L, 2L * buf.length));
            if (want > Integer.MAX_VALUE - 8) {
                want = (long) pos + n;
                if (want > Integer.MAX_VALUE - 8) {
                    throw new OutOfMemoryError("LCMDataOutputStream: a message over 2 GB");
                }
            }
            byte[] grown = new byte[(int) want];
            System.arraycopy(buf, 0, grown, 0, pos);
            buf = grown;
        }
        int at = pos;
        pos += n;
        return at;
    }

    /** Empties the stream (keeping its buffer). */
    public void reset() {
        pos = 0;
    }

    public void write(byte[] b) {
        write(b, 0, b.length);
    }

    public void write(byte[] b, int off, int len) {
        if (off < 0 || len < 0 || off > b.length - len) {
            throw new IndexOutOfBoundsException("offset " + off + ", length " + len + " in an array of " + b.length);
        }
        System.arraycopy(b, off, buf, room(len), len);
    }

    /** Writes each char's low byte. */
    public void writeCharsAsBytes(char[] c) {
        int at = room(c.length);
        for (int k = 0; k < c.length; k++) {
            buf[at + k] = (byte) c[k];
        }
    }

    public void write(int b) {
        buf[room(1)] = (byte) b;
    }

    public void writeBoolean(boolean v) {
        buf[room(1)] = v ? (byte) 1 : (byte) 0;
    }

    public void writeByte(int v) {
        buf[room(1)] = (byte) v;
    }

    /** Writes each char's low byte. */
    public void writeBytes(String s) {
        int at = room(s.length());
        for (int k = 0; k < s.length(); k++) {
            buf[at + k] = (byte) s.charAt(k);
        }
    }

    public void writeChar(int v) {
        writeShort(v);
    }

    public void writeChars(String s) {
        for (int k = 0; k < s.length(); k++) {
            writeShort(s.charAt(k));
        }
    }

    /** Writes each char's low byte, then a zero byte. */
    public void writeStringZ(String s) {
        writeBytes(s);
        write(0);
    }

    public void writeDouble(double v) {
        writeLong(Double.doubleToLongBits(v));
    }

    public void writeFloat(float v) {
        writeInt(Float.floatToIntBits(v));
    }

    public void writeInt(int v) {
        int at = room(4);
        buf[at] = (byte) (v >>> 24);
        buf[at + 1] = (byte) (v >>> 16);
        buf[at + 2] = (byte) (v >>> 8);
        buf[at + 3] = (byte) v;
    }

    public void writeLong(long v) {
        writeInt((int) (v >>> 32));
        writeInt((int) v);
    }

    public void writeShort(int v) {
        int at = room(2);
        buf[at] = (byte) (v >>> 8);
        buf[at + 1] = (byte) v;
    }

    /** Writes {@code s} in {@link DataOutput}'s modified UTF-8 (a 2-byte length, then the bytes). */
    public void writeUTF(String s) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try {
            new DataOutputStream(bytes).writeUTF(s);
        } catch (IOException e) {
            // Only an over-long string (a UTFDataFormatException); a byte array stream cannot fail otherwise.
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        write(bytes.toByteArray());
    }

    /** A copy of the bytes written. */
    public byte[] toByteArray() {
        byte[] out = new byte[pos];
        System.arraycopy(buf, 0, out, 0, pos);
        return out;
    }

    /** The buffer itself (not a copy), which may be longer than {@link #size()}. */
    public byte[] getBuffer() {
        return buf;
    }

    /** How many bytes have been written. */
    public int size() {
        return pos;
    }
}
