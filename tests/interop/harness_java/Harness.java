import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.DataInput;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import lcm.lcm.LCMDataInputStream;
import lcm.lcm.LCMDataOutputStream;
import lcm.lcm.LCMEncodable;

/**
 * The Java interop harness (tests/interop/README.md, "The harness protocol") for the classes nerve gen -j wrote.
 *
 * Usage: Harness TYPES [--api PREFIX] [--compare PREFIX]. TYPES lists the corpus types, one per line, tab-separated:
 * the full name, the fingerprint in hex, then member:lcmtype:ndims for every member. Reads "type hex" lines from
 * stdin and answers one JSON line each. For every input it decodes through byte[], LCMDataInputStream and a plain
 * DataInputStream, which must agree (all decode or all throw IOException); a decoded value must re-encode to the
 * same bytes through copy() and through each stream, and the LCMDataInputStream must stand right after the message.
 * Anything thrown that is not an IOException (OutOfMemoryError, a RuntimeException, StackOverflowError) is a harness
 * failure: exit status 3. With --compare PREFIX, lcm-gen's classes (generated under that package prefix) decode
 * every input that decoded and must re-encode it to the same bytes. With --api PREFIX, only the API is checked:
 * every public field, constant, constructor and method of lcm-gen's class exists in Nerve's with the same types
 * and modifiers, constants have equal values, and fingerprints agree with TYPES and with _hashRecursive.
 */
public final class Harness {
    static final class Member {
        final String name, type;
        final int dims;
        Member(String name, String type, int dims) { this.name = name; this.type = type; this.dims = dims; }
    }

    static final Map<String, List<Member>> TYPES = new HashMap<>();
    static final Map<String, Long> FINGERPRINTS = new HashMap<>();
    static final Map<String, Class<?>> CLASSES = new HashMap<>();

    static void fail(String what) {
        System.out.flush();
        System.err.println("harness check failed: " + what);
        System.exit(3);
    }

    public static void main(String[] args) throws Exception {
        for (String line : Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8)) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t");
            List<Member> ms = new ArrayList<>();
            for (int i = 2; i < f.length; i++) {
                int a = f[i].lastIndexOf(':');
                int b = f[i].lastIndexOf(':', a - 1);
                ms.add(new Member(f[i].substring(0, b), f[i].substring(b + 1, a), Integer.parseInt(f[i].substring(a + 1))));
            }
            TYPES.put(f[0], ms);
            FINGERPRINTS.put(f[0], Long.parseUnsignedLong(f[1], 16));
        }
        String compare = null;
        for (int i = 1; i + 1 < args.length; i += 2) {
            if (args[i].equals("--api")) {
                api(args[i + 1]);
                return;
            }
            if (args[i].equals("--compare")) compare = args[i + 1];
        }
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, "US-ASCII");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        String line;
        while ((line = in.readLine()) != null) {
            int sp = line.indexOf(' ');
            String type = sp < 0 ? line : line.substring(0, sp);
            byte[] data = unhex(sp < 0 ? "" : line.substring(sp + 1));
            out.println(handle(type, data, compare));
        }
        out.flush();
    }

    static Class<?> cls(String name) throws ClassNotFoundException {
        Class<?> c = CLASSES.get(name);
        if (c == null) {
            c = Class.forName(name);
            CLASSES.put(name, c);
        }
        return c;
    }

    /** Decodes data with one of the three ways in; null on an IOException; any other throwable fails the harness. */
    static Object decode(Class<?> c, byte[] data, int way, String what) {
        try {
            switch (way) {
                case 0: return c.getConstructor(byte[].class).newInstance((Object) data);
                case 1: {
                    LCMDataInputStream s = new LCMDataInputStream(data);
                    Object o = c.getConstructor(DataInput.class).newInstance(s);
                    int used = data.length - s.available();
                    if (used != encode(o, what).length) fail(what + ": LCMDataInputStream left at " + used);
                    return o;
                }
                default: {
                    DataInputStream s = new DataInputStream(new ByteArrayInputStream(data));
                    Object o = c.getConstructor(DataInput.class).newInstance((DataInput) s);
                    int used = data.length - s.available();
                    if (used != encode(o, what).length) fail(what + ": DataInputStream read " + used + " bytes");
                    return o;
                }
            }
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof IOException) return null;
            e.getCause().printStackTrace();
            fail(what + ": decode threw " + e.getCause());
        } catch (ReflectiveOperationException | IOException e) {
            fail(what + ": " + e);
        }
        return null;
    }

    static byte[] encode(Object o, String what) {
        try {
            LCMDataOutputStream s = new LCMDataOutputStream();
            ((LCMEncodable) o).encode(s);
            return s.toByteArray();
        } catch (Throwable e) {
            e.printStackTrace();
            fail(what + ": encode threw " + e);
            return null;
        }
    }

    static String handle(String type, byte[] data, String compare) throws Exception {
        Class<?> c = cls(type);
        Object[] got = new Object[3];
        for (int way = 0; way < 3; way++) got[way] = decode(c, data, way, type + " way " + way);
        if ((got[0] == null) != (got[1] == null) || (got[0] == null) != (got[2] == null)) {
            fail(type + ": the ways in disagree on " + hex(data) + ": " + Arrays.toString(got));
        }
        if (got[0] == null) {
            String why;
            try {
                c.getConstructor(byte[].class).newInstance((Object) data);
                why = "?";
            } catch (InvocationTargetException e) {
                why = String.valueOf(e.getCause().getMessage());
            }
            return "{\"ok\": false, \"error\": " + jstr(why.isEmpty() ? "IOException" : why) + "}";
        }
        byte[] re = encode(got[0], type);
        for (int way = 1; way < 3; way++) {
            if (!Arrays.equals(re, encode(got[way], type))) fail(type + ": way " + way + " re-encodes differently");
        }
        Object copy = c.getMethod("copy").invoke(got[0]);
        if (!Arrays.equals(re, encode(copy, type))) fail(type + ": copy() re-encodes differently");
        if (compare != null) {
            Object theirs = decode(cls(compare + "." + type), data, 0, "lcm-gen's " + type);
            if (theirs == null) fail("lcm-gen's " + type + " rejects what Nerve's decodes: " + hex(data));
            byte[] t = encode(theirs, type);
            if (!Arrays.equals(re, t)) fail(type + ": lcm-gen's re-encodes to " + hex(t) + ", Nerve's to " + hex(re));
        }
        StringBuilder o = new StringBuilder("{\"ok\": true, \"reencoded\": \"").append(hex(re)).append("\", \"value\": ");
        value(o, type, got[0]);
        return o.append("}").toString();
    }

    static void value(StringBuilder o, String type, Object obj) throws Exception {
        Class<?> c = cls(type);
        o.append('{');
        boolean first = true;
        for (Member m : TYPES.get(type)) {
            if (!first) o.append(", ");
            first = false;
            o.append(jstr(m.name)).append(": ");
            elem(o, m, c.getField(m.name).get(obj), m.dims);
        }
        o.append('}');
    }

    static void elem(StringBuilder o, Member m, Object v, int dims) throws Exception {
        if (dims > 0) {
            o.append('[');
            int n = Array.getLength(v);
            for (int i = 0; i < n; i++) {
                if (i > 0) o.append(", ");
                elem(o, m, Array.get(v, i), dims - 1);
            }
            o.append(']');
            return;
        }
        switch (m.type) {
            case "byte": o.append(((Byte) v) & 0xff); break;
            case "int8_t": case "int16_t": case "int32_t": case "int64_t": o.append(v); break;
            case "boolean": o.append(((Boolean) v) ? "true" : "false"); break;
            case "float": number(o, (Float) v); break;
            case "double": number(o, (Double) v); break;
            case "string": o.append(jstr((String) v)); break;
            default: value(o, m.type, v);
        }
    }

    static void number(StringBuilder o, double d) {
        if (Double.isNaN(d)) o.append("\"NaN\"");
        else if (Double.isInfinite(d)) o.append(d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        else o.append(d);
    }

    static void number(StringBuilder o, Float f) {
        if (f.isNaN() || f.isInfinite()) number(o, f.doubleValue());
        else o.append(f.toString());
    }

    static String jstr(String s) {
        StringBuilder o = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') o.append('\\').append(c);
            else if (c < 0x20 || c >= 0x7f) o.append(String.format("\\u%04x", (int) c));
            else o.append(c);
        }
        return o.append('"').toString();
    }

    static String hex(byte[] b) {
        char[] d = "0123456789abcdef".toCharArray();
        StringBuilder s = new StringBuilder();
        for (byte x : b) s.append(d[(x >> 4) & 15]).append(d[x & 15]);
        return s.toString();
    }

    static byte[] unhex(String h) {
        byte[] b = new byte[h.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    // ----------------------------------------------------------------------------------------------------------
    // The API check against lcm-gen's classes.

    static String strip(String prefix, String typeName) {
        return typeName.replace(prefix + ".", "");
    }

    static void api(String prefix) throws Exception {
        List<String> problems = new ArrayList<>();
        int checked = 0;
        for (String type : TYPES.keySet()) {
            Class<?> mine = Class.forName(type);
            Class<?> theirs;
            try {
                theirs = Class.forName(prefix + "." + type);
            } catch (ClassNotFoundException e) {
                problems.add(type + ": lcm-gen wrote no class");
                continue;
            }
            checked++;
            long fp = FINGERPRINTS.get(type);
            if (mine.getField("LCM_FINGERPRINT").getLong(null) != fp) problems.add(type + ": LCM_FINGERPRINT");
            if (theirs.getField("LCM_FINGERPRINT").getLong(null) != fp) problems.add(type + ": lcm-gen's LCM_FINGERPRINT");
            long h = (Long) mine.getMethod("_hashRecursive", ArrayList.class).invoke(null, new ArrayList<Class<?>>());
            if (h != fp) problems.add(type + ": _hashRecursive gives " + Long.toHexString(h));
            if (mine.getModifiers() != theirs.getModifiers()) problems.add(type + ": class modifiers");
            if (!Arrays.equals(names(mine.getInterfaces()), names(theirs.getInterfaces()))) problems.add(type + ": interfaces");
            for (Field f : theirs.getFields()) {
                Field g;
                try {
                    g = mine.getField(f.getName());
                } catch (NoSuchFieldException e) {
                    problems.add(type + ": no field " + f.getName());
                    continue;
                }
                if (g.getModifiers() != f.getModifiers()) problems.add(type + "." + f.getName() + ": modifiers");
                if (!g.getGenericType().getTypeName().equals(strip(prefix, f.getGenericType().getTypeName()))) {
                    problems.add(type + "." + f.getName() + ": type " + g.getGenericType() + " vs " + f.getGenericType());
                }
                if (Modifier.isStatic(f.getModifiers()) && !String.valueOf(g.get(null)).equals(String.valueOf(f.get(null)))) {
                    problems.add(type + "." + f.getName() + ": value " + g.get(null) + " vs " + f.get(null));
                }
            }
            for (Method m : theirs.getMethods()) {
                if (m.getDeclaringClass() != theirs) continue;
                boolean found = false;
                for (Method n : mine.getMethods()) {
                    if (n.getName().equals(m.getName()) && n.getModifiers() == m.getModifiers()
                            && n.toGenericString().replace(type, "T").equals(m.toGenericString().replace(prefix + ".", "").replace(type, "T"))) {
                        found = true;
                    }
                }
                if (!found) problems.add(type + ": no method " + m.toGenericString());
            }
            for (Constructor<?> k : theirs.getConstructors()) {
                try {
                    mine.getConstructor(k.getParameterTypes());
                } catch (NoSuchMethodException e) {
                    problems.add(type + ": no constructor " + k);
                }
            }
        }
        for (String p : problems) System.err.println(p);
        System.out.println("api checked: " + checked + " types, " + problems.size() + " problems");
        System.exit(problems.isEmpty() ? 0 : 3);
    }

    static String[] names(Class<?>[] cs) {
        String[] out = new String[cs.length];
        for (int i = 0; i < cs.length; i++) out[i] = cs[i].getName();
        Arrays.sort(out);
        return out;
    }
}
