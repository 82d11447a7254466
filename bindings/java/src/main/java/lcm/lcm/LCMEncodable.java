package lcm.lcm;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;

/** A message type: what lcm-gen's (and {@code nerve gen}'s) Java classes implement. */
public interface LCMEncodable {
    /** Writes the fingerprint, then the fields. */
    void encode(DataOutput outs) throws IOException;

    /** Writes the fields only (used for nested types). */
    void _encodeRecursive(DataOutput outs) throws IOException;

    /** Reads the fields only (used for nested types). */
    void _decodeRecursive(DataInput ins) throws IOException;
}
