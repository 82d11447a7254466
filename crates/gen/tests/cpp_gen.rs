//! The C++ generator: what it writes, what it rejects, and (compiled with g++ under ASan/UBSan) that the code encodes
//! spec 3.1's example messages byte for byte, decodes them back, reads them through views, and rejects damage.

use std::process::Command;

use nerve_gen::{cpp, GenError, GeneratedFile, Input, Options};
use nerve_types::{check, Source};

fn gen(text: &str) -> Result<Vec<GeneratedFile>, GenError> {
    let src = Source { path: "t.lcm".into(), text: text.into() };
    let checked = check(&[src], &[]).unwrap_or_else(|e| panic!("{}", e.render()));
    cpp::generate(&Input::new(&checked), &Options::default())
}

fn file<'a>(files: &'a [GeneratedFile], path: &str) -> &'a str {
    &files.iter().find(|f| f.path == std::path::Path::new(path)).unwrap_or_else(|| panic!("no {path}")).contents
}

const SEED: &str = "package seed;
struct waypoint_t { string id; float position[2]; }
struct path_t { int64_t timestamp; int32_t num_waypoints; waypoint_t waypoints[num_waypoints]; }
struct image_t { int64_t utime; int32_t width; int32_t height; int32_t pixelformat; int32_t size; byte data[size]; }
struct laser_t { int64_t utime; int32_t nranges; float ranges[nranges]; float rad0; float radstep; }
/// A tree.
struct node_t { int32_t n; node_t children[n]; string name; }
struct a_t { b_t b[0x1]; c_t c[1]; }
struct b_t { int8_t n; a_t a[n]; }
struct c_t { int8_t n; b_t b[n]; }
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
fn writes_one_header_per_type_and_the_runtime_at_the_root() {
    let files = gen(SEED).unwrap();
    let mut paths: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "nerve_lcm.hpp",
            "seed/a_t.hpp",
            "seed/b_t.hpp",
            "seed/c_t.hpp",
            "seed/color_t.hpp",
            "seed/image_t.hpp",
            "seed/k_t.hpp",
            "seed/laser_t.hpp",
            "seed/node_t.hpp",
            "seed/path_t.hpp",
            "seed/uses_t.hpp",
            "seed/waypoint_t.hpp"
        ]
    );
    assert_eq!(file(&files, "nerve_lcm.hpp"), cpp::RUNTIME);
}

#[test]
fn members_have_lcmgen_types_and_constants_are_constexpr() {
    let files = gen(SEED).unwrap();
    let k = file(&files, "seed/k_t.hpp");
    assert!(k.contains("int8_t ok;"), "{k}");
    assert!(k.contains("int16_t m[2][3];"));
    assert!(k.contains("static constexpr int32_t YES = 16; // as written: 0x10"));
    assert!(k.contains("static constexpr int32_t MIN32 = (-2147483647 - 1);"));
    assert!(k.contains("static constexpr int64_t ALL = -1LL; // as written: 0xffffffffffffffff"));
    assert!(k.contains("static constexpr double PI = 3.14159;"));
    assert!(k.contains("static constexpr float HALF = static_cast<float>(0.5);"));
    // The view renames an accessor that would clash with its own ok().
    assert!(k.contains("ok_() const;"));
    let img = file(&files, "seed/image_t.hpp");
    assert!(img.contains("std::vector< uint8_t > data;"), "{img}");
    assert!(img.contains("namespace seed {"));
    assert!(img.contains("inline int encode(void *buf, int offset, int maxlen) const;"));
    let node = file(&files, "seed/node_t.hpp");
    assert!(node.contains("/// A tree.\nclass node_t"), "{node}");
}

#[test]
fn mutually_recursive_types_share_one_block() {
    let files = gen(SEED).unwrap();
    let a = file(&files, "seed/a_t.hpp");
    assert_eq!(a, file(&files, "seed/b_t.hpp"));
    assert_eq!(a, file(&files, "seed/c_t.hpp"));
    // b_t and c_t are held by value in a_t, so they are defined first.
    let pos = |s: &str| a.find(s).unwrap_or_else(|| panic!("no {s}"));
    assert!(pos("class b_t\n") < pos("class a_t\n"));
    assert!(pos("class c_t\n") < pos("class a_t\n"));
}

#[test]
fn rejects_what_cpp_cannot_express() {
    let e = gen("struct s_t { int32_t class; }").unwrap_err();
    assert!(e.message.contains("C++ keyword"), "{e}");
    assert_eq!((e.span.line, e.language), (1, "cpp"));
    let e = gen("struct s_t { int32_t encode; }").unwrap_err();
    assert!(e.message.contains("clashes"), "{e}");
    let e = gen("struct s_t { s_t inner; }").unwrap_err();
    assert!(e.message.contains("contains itself by value"), "{e}");
}

const PROGRAM: &str = r#"
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include "seed/path_t.hpp"
#include "seed/image_t.hpp"
#include "seed/laser_t.hpp"
#include "seed/node_t.hpp"
#include "seed/a_t.hpp"
#include "seed/k_t.hpp"
#include "seed/uses_t.hpp"

static int failures = 0;
#define CHECK(c) do { if (!(c)) { std::printf("FAILED line %d: %s\n", __LINE__, #c); ++failures; } } while (0)

static std::string hex(const std::vector<uint8_t> &b) {
    std::string s;
    char t[3];
    for (size_t i = 0; i < b.size(); ++i) { std::snprintf(t, 3, "%02x", b[i]); s += t; }
    return s;
}
static std::vector<uint8_t> unhex(const char *h) {
    std::vector<uint8_t> b;
    for (size_t i = 0; h[i] && h[i + 1]; i += 2) { unsigned v; std::sscanf(h + i, "%2x", &v); b.push_back(static_cast<uint8_t>(v)); }
    return b;
}
template <class T> static std::vector<uint8_t> enc(const T &m) {
    std::vector<uint8_t> b(static_cast<size_t>(m.getEncodedSize()));
    CHECK(m.encode(b.data(), 0, static_cast<int>(b.size())) == static_cast<int>(b.size()));
    return b;
}
// Every strict prefix must fail to decode (and ASan watches each exactly-sized copy).
template <class T> static void truncations(const std::vector<uint8_t> &b) {
    for (size_t n = 0; n < b.size(); ++n) {
        std::vector<uint8_t> cut(b.begin(), b.begin() + static_cast<long>(n));
        T m;
        CHECK(m.decode(cut.empty() ? 0 : cut.data(), 0, static_cast<int>(n)) < 0);
    }
}

int main() {
    // spec 3.1: path_t
    seed::path_t p;
    p.timestamp = 1234567890123LL;
    p.num_waypoints = 2;
    p.waypoints.resize(2);
    p.waypoints[0].id = "A"; p.waypoints[0].position[0] = 1.0f; p.waypoints[0].position[1] = -2.5f;
    p.waypoints[1].id = ""; p.waypoints[1].position[0] = 0.0f; p.waypoints[1].position[1] = 0.5f;
    std::vector<uint8_t> pb = enc(p);
    CHECK(hex(pb) == "9ab3ca4022072a1e0000011f71fb04cb00000002000000024100"
                     "3f800000c02000000000000100000000003f000000");
    seed::path_t p2;
    CHECK(p2.decode(pb.data(), 0, static_cast<int>(pb.size())) == static_cast<int>(pb.size()));
    CHECK(p2.num_waypoints == 2 && p2.waypoints[0].id == "A" && p2.waypoints[1].position[1] == 0.5f);
    seed::path_t::View pv(pb.data(), pb.size());
    CHECK(pv.ok() && pv.timestamp().value() == 1234567890123LL);
    CHECK(pv.waypoints().size() == 2 && pv.waypoints()[0].id() == "A");
    CHECK(pv.waypoints()[1].position()[1].value() == 0.5f);
    CHECK(!pv.waypoints()[2].ok() && !pv.waypoints()[1].position()[2].ok());
    truncations<seed::path_t>(pb);
    // A count larger than the bytes left is refused before anything is allocated.
    std::vector<uint8_t> huge = pb;
    huge[16] = 0x7f;
    CHECK(p2.decode(huge.data(), 0, static_cast<int>(huge.size())) < 0);
    CHECK(!seed::path_t::View(huge.data(), huge.size()).waypoints().ok());
    // A wrong fingerprint.
    std::vector<uint8_t> wrong = pb;
    wrong[0] ^= 1;
    CHECK(p2.decode(wrong.data(), 0, static_cast<int>(wrong.size())) == -1);
    CHECK(!seed::path_t::View(wrong.data(), wrong.size()).ok());

    // spec 3.1: image_t
    std::vector<uint8_t> ib = unhex("e1edf893c3149f31000000000000000100000002000000015945524700000002" "00ff");
    seed::image_t img;
    CHECK(img.decode(ib.data(), 0, static_cast<int>(ib.size())) == 34);
    CHECK(img.pixelformat == 0x59455247 && img.data.size() == 2 && img.data[1] == 0xff);
    CHECK(hex(enc(img)) == hex(ib));
    seed::image_t::View iv = seed::image_t::View::from(ib.data(), ib.size());
    CHECK(iv.data().size() == 2 && iv.data()[1].value() == 0xff && iv.size().value() == 2);
    truncations<seed::image_t>(ib);

    // spec 3.1: laser_t, with a trailing field read after the variable region.
    std::vector<uint8_t> lb = unhex("18f48ab44e6fd954ffffffffffffffff000000033f800000400000007f800000bfc90fdb3c23d70a");
    seed::laser_t l;
    CHECK(l.decode(lb.data(), 0, static_cast<int>(lb.size())) == 40);
    CHECK(l.utime == -1 && l.nranges == 3 && l.ranges[1] == 2.0f && l.radstep == 0.01f);
    CHECK(hex(enc(l)) == hex(lb));
    seed::laser_t::View lv(lb.data(), lb.size());
    CHECK(lv.radstep().value() == 0.01f && lv.rad0().ok());
    float r[3];
    CHECK(lv.ranges().copy_to(r) && r[0] == 1.0f && r[1] == 2.0f);
    truncations<seed::laser_t>(lb);
    // A count member larger than its vector: encode fails rather than reading past the vector.
    l.nranges = 4;
    std::vector<uint8_t> big(100);
    CHECK(l.encode(big.data(), 0, 100) < 0);

    // Recursion: a node_t three levels deep; views skip the children to reach the name.
    seed::node_t n;
    n.n = 1; n.name = "root"; n.children.resize(1);
    n.children[0].n = 1; n.children[0].name = "kid"; n.children[0].children.resize(1);
    n.children[0].children[0].n = 0; n.children[0].children[0].name = "";
    std::vector<uint8_t> nb = enc(n);
    seed::node_t n2;
    CHECK(n2.decode(nb.data(), 0, static_cast<int>(nb.size())) == static_cast<int>(nb.size()));
    CHECK(n2.children[0].name == "kid");
    seed::node_t::View nv(nb.data(), nb.size());
    CHECK(nv.name() == "root" && nv.children()[0].name() == "kid" && nv.children()[0].children()[0].name().ok());
    truncations<seed::node_t>(nb);

    // Mutual recursion compiles and round-trips; fingerprints agree with _computeHash (spec 2.4 values).
    CHECK(seed::a_t::getHash() == static_cast<int64_t>(0x237edb03958bfbb7ULL));
    CHECK(seed::b_t::getHash() == static_cast<int64_t>(0x10147d7c75369fa4ULL));
    CHECK(seed::c_t::_computeHash(0) == 0xa0203407025235f7ULL);
    seed::a_t a;
    a.b[0].n = 0; a.c[0].n = 0;
    std::vector<uint8_t> ab = enc(a);
    seed::a_t a2;
    CHECK(a2.decode(ab.data(), 0, static_cast<int>(ab.size())) == 10);

    // Constants and the renamed view accessor.
    CHECK(seed::k_t::YES == 16 && seed::k_t::ALL == -1 && seed::k_t::HALF == 0.5f);
    seed::k_t k;
    k.ok = 1;
    for (int i = 0; i < 2; ++i) for (int j = 0; j < 3; ++j) k.m[i][j] = static_cast<int16_t>(i * 3 + j - 2);
    std::vector<uint8_t> kb = enc(k);
    seed::k_t::View kv(kb.data(), kb.size());
    CHECK(kv.ok_().value() == 1 && kv.m()[1][2].value() == 3 && kv.m()[0][0].value() == -2);
    CHECK(std::strcmp(seed::k_t::getTypeName(), "k_t") == 0);

    // A (deprecated) enum: a class holding int32_t value; spec 1.6's hash for color_t.
    CHECK(seed::color_t::getHash() == static_cast<int64_t>(0x07636f6d82a7e5b6ULL));
    CHECK(seed::color_t::GREEN == 2 && seed::color_t::BLUE == 5);
    seed::uses_t u;
    u.c.value = seed::color_t::BLUE; u.n = 2; u.cs.resize(2); u.cs[0].value = 1; u.cs[1].value = -7; u.s = "x";
    std::vector<uint8_t> ub = enc(u);
    CHECK(ub.size() == 8 + 4 + 4 + 8 + 6);
    seed::uses_t u2;
    CHECK(u2.decode(ub.data(), 0, static_cast<int>(ub.size())) == static_cast<int>(ub.size()));
    CHECK(u2.c.value == 5 && u2.cs[1].value == -7 && u2.s == "x");
    seed::uses_t::View uv(ub.data(), ub.size());
    CHECK(uv.cs()[1].value() == -7 && uv.s() == "x" && uv.c().value() == 5);
    truncations<seed::uses_t>(ub);

    std::printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
"#;

#[test]
fn generated_code_encodes_spec_examples_and_survives_damage_under_sanitizers() {
    let files = gen(SEED).unwrap();
    let dir = std::env::temp_dir().join(format!("nerve-cpp-gen-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for f in &files {
        let p = dir.join(&f.path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, &f.contents).unwrap();
    }
    std::fs::write(dir.join("main.cpp"), PROGRAM).unwrap();
    let exe = dir.join("main");
    let out = Command::new("g++")
        .args(["-std=c++11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O1", "-g"])
        .args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-I"])
        .arg(&dir)
        .arg(dir.join("main.cpp"))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("g++ is needed for the C++ generator's tests");
    assert!(out.status.success(), "g++ failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(&exe).output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("0 failures"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
