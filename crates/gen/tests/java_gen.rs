//! The Java generator: what it writes, what it rejects, and (compiled with `javac --release 8` against LCM's own
//! lcm.jar) that the classes encode spec 3.1's example messages byte for byte, decode them back, and reject
//! damage with an IOException. tests/interop/test_java_gen.py checks every corpus type against the real LCM.

use std::path::{Path, PathBuf};
use std::process::Command;

use nerve_gen::{java, GenError, GeneratedFile, Input, Options};
use nerve_types::{check, Source};

fn gen_with(text: &str, opts: &Options) -> Result<Vec<GeneratedFile>, GenError> {
    let src = Source { path: "t.lcm".into(), text: text.into() };
    let checked = check(&[src], &[]).unwrap_or_else(|e| panic!("{}", e.render()));
    java::generate(&Input::new(&checked), opts)
}

fn gen(text: &str) -> Result<Vec<GeneratedFile>, GenError> {
    gen_with(text, &Options::default())
}

fn file<'a>(files: &'a [GeneratedFile], path: &str) -> &'a str {
    &files.iter().find(|f| f.path == Path::new(path)).unwrap_or_else(|| panic!("no {path}")).contents
}

const SEED: &str = "package seed;
struct waypoint_t { string id; float position[2]; }
struct path_t { int64_t timestamp; int32_t num_waypoints; waypoint_t waypoints[num_waypoints]; }
struct image_t { int64_t utime; int32_t width; int32_t height; int32_t pixelformat; int32_t size; byte data[size]; }
struct laser_t { int64_t utime; int32_t nranges; float ranges[nranges]; float rad0; float radstep; }
/// A tree.
struct node_t { int32_t n; node_t children[n]; string name; }
struct k_t {
    const int32_t YES = 0x10, MIN32 = -2147483648;
    const int64_t ALL = 0xffffffffffffffff;
    const double PI = 3.14159;
    const float HALF = .5;
    boolean ok;
    int16_t m[2][3];
}
enum color_t { RED=1, GREEN, BLUE=5 }
struct uses_t { color_t c; int32_t n; color_t cs[n]; string s; }
";

#[test]
fn writes_one_class_per_type_and_the_runtime() {
    let files = gen(SEED).unwrap();
    let mut paths: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "nerve_lcm/Codec.java",
            "seed/color_t.java",
            "seed/image_t.java",
            "seed/k_t.java",
            "seed/laser_t.java",
            "seed/node_t.java",
            "seed/path_t.java",
            "seed/uses_t.java",
            "seed/waypoint_t.java"
        ]
    );
    assert_eq!(file(&files, "nerve_lcm/Codec.java"), java::RUNTIME);
    let k = file(&files, "seed/k_t.java");
    assert!(k.contains("public final class k_t implements lcm.lcm.LCMEncodable"), "{k}");
    assert!(k.contains("public static final int YES = 16;"), "{k}");
    assert!(k.contains("public static final long ALL = -1L;"), "{k}");
    assert!(k.contains("public static final float HALF = 0.5f;"), "{k}");
    assert!(k.contains("public short m[][];"), "{k}");
    assert!(k.contains("this.m = new short[2][3];"), "{k}");
    let node = file(&files, "seed/node_t.java");
    assert!(node.contains("/**\n * A tree.\n */\npublic final class node_t"), "{node}");
    assert!(node.contains("_r.enter();"), "recursive types count their depth");
}

#[test]
fn options_set_the_declaration_and_packages() {
    let text = "struct bare_t { int32_t x; }\npackage p; struct w_t { int8_t y; } struct q_t { w_t w; }";
    let files = gen(text).unwrap();
    assert!(file(&files, "lcmtypes/bare_t.java").contains("package lcmtypes;"));
    let opts = Options {
        java_decl: "implements lcm.lcm.LCMEncodable, java.io.Serializable".into(),
        java_default_package: "dflt".into(),
        ..Options::default()
    };
    let files = gen_with(text, &opts).unwrap();
    let bare = file(&files, "dflt/bare_t.java");
    assert!(bare.contains("public final class bare_t implements lcm.lcm.LCMEncodable, java.io.Serializable"));
    // With a prefix, a type without a package goes into the prefix (as lcm-gen does).
    let opts = Options { package_prefix: "pp".into(), ..opts };
    let files = gen_with(text, &opts).unwrap();
    assert!(file(&files, "pp/bare_t.java").contains("package pp;"));
    assert!(file(&files, "pp/p/q_t.java").contains("public pp.p.w_t w;"));
}

#[test]
fn non_ascii_is_escaped() {
    let files = gen("package u; struct s_t { int32_t caf\u{e9}; }").unwrap();
    let s = file(&files, "u/s_t.java");
    assert!(s.is_ascii());
    assert!(s.contains("public int caf\\u00e9;"), "{s}");
}

#[test]
fn rejects_what_java_cannot_express() {
    let e = gen("struct s_t { int32_t class; }").unwrap_err();
    assert!(e.message.contains("Java keyword"), "{e}");
    assert_eq!((e.span.line, e.language), (1, "java"));
    let e = gen("package seed; struct w_t { int32_t x; } struct s_t { w_t w; int32_t seed; }").unwrap_err();
    assert!(e.message.contains("would hide the Java package"), "{e}");
    let e = gen("struct s_t { const int32_t LCM_FINGERPRINT = 1; int32_t x; }").unwrap_err();
    assert!(e.message.contains("clashes"), "{e}");
}

/// LCM's jar from the `lcm` wheel in the venv (the oracle), if the venv is there.
fn lcm_jar() -> PathBuf {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv/lib");
    let found = std::fs::read_dir(&venv)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("site-packages/share/java/lcm.jar"))
        .find(|p| p.exists());
    found.unwrap_or_else(|| panic!("no lcm.jar under {}: run scripts/setup", venv.display()))
}

const PROGRAM: &str = r#"
import java.io.*;
import java.util.*;
import lcm.lcm.*;

public class Main {
    static int failures = 0;
    static void check(boolean c, String what) { if (!c) { System.out.println("FAILED: " + what); failures++; } }
    static String hex(byte[] b) { StringBuilder s = new StringBuilder(); for (byte x : b) s.append(String.format("%02x", x)); return s.toString(); }
    static byte[] unhex(String h) { byte[] b = new byte[h.length() / 2]; for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16); return b; }
    static byte[] enc(LCMEncodable m) throws IOException { LCMDataOutputStream o = new LCMDataOutputStream(); m.encode(o); return o.toByteArray(); }
    interface Dec { void run(byte[] b) throws IOException; }
    // Every strict prefix must fail to decode with an IOException, through each way in.
    static void truncations(byte[] b, Dec d, String what) {
        for (int n = 0; n < b.length; n++) {
            try { d.run(Arrays.copyOf(b, n)); check(false, what + " truncated to " + n); } catch (IOException e) { }
        }
    }

    public static void main(String[] args) throws Exception {
        seed.path_t p = new seed.path_t();
        p.timestamp = 1234567890123L;
        p.num_waypoints = 2;
        p.waypoints = new seed.waypoint_t[2];
        p.waypoints[0] = new seed.waypoint_t(); p.waypoints[0].id = "A"; p.waypoints[0].position = new float[] {1.0f, -2.5f};
        p.waypoints[1] = new seed.waypoint_t(); p.waypoints[1].id = ""; p.waypoints[1].position = new float[] {0.0f, 0.5f};
        byte[] pb = enc(p);
        check(hex(pb).equals("9ab3ca4022072a1e0000011f71fb04cb000000020000000241003f800000c02000000000000100000000003f000000"), "path_t bytes " + hex(pb));
        seed.path_t p2 = new seed.path_t(pb);
        check(p2.num_waypoints == 2 && p2.waypoints[0].id.equals("A") && p2.waypoints[1].position[1] == 0.5f, "path_t decode");
        check(hex(enc(p2.copy())).equals(hex(pb)), "path_t copy");
        // Through LCM's own stream, which must end up past the message.
        LCMDataInputStream in = new LCMDataInputStream(Arrays.copyOf(pb, pb.length + 3));
        seed.path_t p3 = new seed.path_t(in);
        check(in.available() == 3 && p3.waypoints[1].id.equals(""), "path_t from LCMDataInputStream");
        // Through a plain DataInput, which must not be read past the message either.
        DataInputStream din = new DataInputStream(new ByteArrayInputStream(Arrays.copyOf(pb, pb.length + 3)));
        check(hex(enc(new seed.path_t((DataInput) din))).equals(hex(pb)) && din.available() == 3, "path_t from DataInput");
        truncations(pb, b -> new seed.path_t(b), "path_t");
        truncations(pb, b -> new seed.path_t((DataInput) new DataInputStream(new ByteArrayInputStream(b))), "path_t stream");
        byte[] huge = pb.clone();
        huge[16] = 0x7f;
        try { new seed.path_t(huge); check(false, "huge count accepted"); } catch (IOException e) { }
        try { new seed.path_t((DataInput) new DataInputStream(new ByteArrayInputStream(huge))); check(false, "huge count accepted from a stream"); } catch (IOException e) { }
        byte[] wrong = pb.clone();
        wrong[0] ^= 1;
        try { new seed.path_t(wrong); check(false, "bad fingerprint accepted"); } catch (IOException e) { check(e.getMessage().contains("fingerprint"), e.getMessage()); }

        byte[] ib = unhex("e1edf893c3149f31000000000000000100000002000000015945524700000002" + "00ff");
        seed.image_t img = new seed.image_t(ib);
        check(img.pixelformat == 0x59455247 && img.data.length == 2 && img.data[1] == (byte) 0xff, "image_t decode");
        check(hex(enc(img)).equals(hex(ib)), "image_t encode");
        truncations(ib, b -> new seed.image_t(b), "image_t");

        byte[] lb = unhex("18f48ab44e6fd954ffffffffffffffff000000033f800000400000007f800000bfc90fdb3c23d70a");
        seed.laser_t l = new seed.laser_t(lb);
        check(l.utime == -1 && l.nranges == 3 && l.ranges[1] == 2.0f && l.radstep == 0.01f, "laser_t decode");
        check(hex(enc(l)).equals(hex(lb)), "laser_t encode");
        truncations(lb, b -> new seed.laser_t(b), "laser_t");
        l.nranges = 4;
        try { enc(l); check(false, "a count beyond its array encoded"); } catch (ArrayIndexOutOfBoundsException e) { }

        // 1000 levels of node_t: deeper than the decoder goes, an IOException and no stack overflow.
        ByteArrayOutputStream deep = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(deep);
        d.writeLong(seed.node_t.LCM_FINGERPRINT);
        for (int i = 0; i < 1000; i++) d.writeInt(1);
        try { new seed.node_t(deep.toByteArray()); check(false, "deep nesting accepted"); } catch (IOException e) { }

        check(seed.k_t.YES == 16 && seed.k_t.ALL == -1 && seed.k_t.HALF == 0.5f && seed.k_t.MIN32 == Integer.MIN_VALUE, "constants");
        check(seed.node_t._hashRecursive(new ArrayList<Class<?>>()) == seed.node_t.LCM_FINGERPRINT, "node_t hash");
        check(seed.color_t.LCM_FINGERPRINT == 0x07636f6d82a7e5b6L && seed.color_t.BLUE == 5, "enum");
        seed.uses_t u = new seed.uses_t();
        u.c = new seed.color_t(seed.color_t.BLUE); u.n = 2; u.cs = new seed.color_t[] {new seed.color_t(1), new seed.color_t(-7)}; u.s = "h\u00e9\u20ac";
        byte[] ub = enc(u);
        check(ub.length == 8 + 4 + 4 + 8 + 4 + 7, "uses_t size " + ub.length);
        check(hex(ub).endsWith("0000000768c3a9e282ac00"), "UTF-8 string " + hex(ub));
        seed.uses_t u2 = new seed.uses_t(ub);
        check(u2.c.value == 5 && u2.cs[1].value == -7 && u2.s.equals("h\u00e9\u20ac"), "uses_t decode");
        byte[] bad = ub.clone();
        bad[bad.length - 2] = (byte) 0xff;
        try { new seed.uses_t(bad); check(false, "invalid UTF-8 accepted"); } catch (IOException e) { }
        System.out.println(failures + " failures");
        System.exit(failures == 0 ? 0 : 1);
    }
}
"#;

#[test]
fn generated_code_encodes_spec_examples_and_rejects_damage() {
    let files = gen(SEED).unwrap();
    let dir = std::env::temp_dir().join(format!("nerve-java-gen-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut sources = Vec::new();
    for f in &files {
        let p = dir.join("src").join(&f.path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, &f.contents).unwrap();
        sources.push(p);
    }
    let main = dir.join("src/Main.java");
    std::fs::write(&main, PROGRAM).unwrap();
    sources.push(main);
    let jar = lcm_jar();
    let classes = dir.join("classes");
    let out = Command::new("javac")
        .args(["--release", "8", "-Xlint:all,-options,-cast", "-Werror", "-encoding", "UTF-8", "-cp"])
        .arg(&jar)
        .arg("-d")
        .arg(&classes)
        .args(&sources)
        .output()
        .expect("javac is needed for the Java generator's tests");
    assert!(out.status.success(), "javac failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let cp = format!("{}:{}", classes.display(), jar.display());
    let run = Command::new("java").args(["-Xss512k", "-cp", &cp, "Main"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("0 failures"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
