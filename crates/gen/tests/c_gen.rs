//! The C generator's output shape: lcm-gen's file names, struct layout, constants and function names, the runtime
//! header emitted alongside, and generated code that compiles under `-std=c99 -Wall -Wextra -Werror -pedantic` and
//! round-trips a message (when a C compiler is installed). The interop tests in tests/interop/test_c.py compare
//! against the real LCM.

use std::path::Path;
use std::process::Command;

use nerve_gen::{c, GeneratedFile, Input, Options};
use nerve_types::{check, Source};

fn generate(text: &str) -> Vec<GeneratedFile> {
    let checked = check(&[Source { path: "t.lcm".into(), text: text.into() }], &[]).expect("valid types");
    // Without publish/subscribe: these programs build with no LCM header or library (tests/interop/test_c_pubsub.py
    // builds the full API against the real liblcm).
    c::generate(&Input::new(&checked), &Options { c_pubsub: false, ..Options::default() }).expect("C generates")
}

fn file<'a>(files: &'a [GeneratedFile], name: &str) -> &'a str {
    &files.iter().find(|f| f.path == Path::new(name)).unwrap_or_else(|| panic!("no {name}")).contents
}

const SEED: &str = "package seed;
/// A point on a path.
struct waypoint_t { string id; float position[2]; }
struct path_t { const int64_t MAX = 100; const double SCALE = 1.5; int64_t timestamp; int32_t num_waypoints;
  waypoint_t waypoints[num_waypoints]; double grid[num_waypoints][3]; boolean ok; byte raw[2]; }";

/// Writes the C generated for `types` and `main.c` to a fresh directory, compiles them all under `-std=c99 -Wall
/// -Wextra -Werror -pedantic` plus `flags`, asserts that it compiled, and returns the directory and the program.
/// A missing C compiler fails the test (scripts/setup installs one): a test that skipped would pass unchecked.
fn build_c(tag: &str, types: &str, main: &str, flags: &[&str]) -> (std::path::PathBuf, std::path::PathBuf) {
    if let Err(e) = Command::new("cc").arg("--version").output() {
        panic!("no C compiler (`cc --version`: {e}); scripts/setup installs one");
    }
    let dir = std::env::temp_dir().join(format!("nerve-c-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut sources = vec![dir.join("main.c")];
    for f in generate(types) {
        std::fs::write(dir.join(&f.path), &f.contents).unwrap();
        if f.path.extension().is_some_and(|e| e == "c") {
            sources.push(dir.join(&f.path));
        }
    }
    std::fs::write(dir.join("main.c"), main).unwrap();
    let exe = dir.join("main");
    let out = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"])
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .args(&sources)
        .arg("-I")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "compile failed:\n{}", String::from_utf8_lossy(&out.stderr));
    (dir, exe)
}

/// Compiler flags for AddressSanitizer and UndefinedBehaviorSanitizer, stopping at the first error.
const SANITIZE: &[&str] =
    &["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"];

#[test]
fn files_are_named_like_lcmgens_plus_the_runtime_header() {
    let files = generate(SEED);
    let mut names: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
    names.sort();
    assert_eq!(names, ["nerve_lcm.h", "seed_path_t.c", "seed_path_t.h", "seed_waypoint_t.c", "seed_waypoint_t.h"]);
    assert_eq!(file(&files, "nerve_lcm.h"), c::RUNTIME_HEADER);
}

#[test]
fn struct_layout_constants_and_functions_follow_lcmgen() {
    let files = generate(SEED);
    let h = file(&files, "seed_path_t.h");
    assert!(h.contains("typedef struct _seed_path_t seed_path_t;"));
    assert!(h.contains("int64_t    timestamp;"));
    assert!(h.contains("struct _seed_waypoint_t *waypoints;"));
    assert!(h.contains("double     **grid;"));
    assert!(h.contains("int8_t     ok;"));
    assert!(h.contains("uint8_t    raw[2];"));
    assert!(h.contains("#define SEED_PATH_T_MAX 100LL"));
    assert!(h.contains("#define SEED_PATH_T_SCALE 1.5"));
    for f in [
        "seed_path_t_encode(void *buf, int offset, int maxlen, const seed_path_t *p)",
        "seed_path_t_decode(const void *buf, int offset, int maxlen, seed_path_t *msg)",
        "seed_path_t_decode_cleanup(seed_path_t *p)",
        "seed_path_t_encoded_size(const seed_path_t *p)",
        "seed_path_t_struct_size(void)",
        "__seed_path_t_get_hash(void)",
        "seed_path_t* seed_path_t_copy(",
        "seed_path_t_destroy(",
        "__seed_path_t_encode_array(",
        "__seed_path_t_decode_array(",
        "__seed_path_t_decode_array_cleanup(",
        "__seed_path_t_encoded_array_size(",
        "__seed_path_t_clone_array(",
    ] {
        assert!(h.contains(f), "missing {f}");
    }
    assert!(!h.contains("_publish") && !h.contains("lcm/lcm.h"), "--c-no-pubsub leaves them out");
    let w = file(&files, "seed_waypoint_t.h");
    assert!(w.contains("/**\n * A point on a path.\n */\ntypedef struct _seed_waypoint_t"));
    assert!(w.contains("float      position[2];"));
    assert!(!w.contains("__seed_waypoint_t_encode_raw"), "waypoint_t has a string: no raw functions");
    assert!(file(&files, "seed_path_t.c").contains("UINT64_C(0x"));
}

#[test]
fn publish_and_subscribe_follow_lcmgen_by_default() {
    let checked = check(&[Source { path: "t.lcm".into(), text: SEED.into() }], &[]).expect("valid types");
    let files = c::generate(&Input::new(&checked), &Options::default()).expect("C generates");
    let h = file(&files, "seed_path_t.h");
    assert!(h.contains("#include <lcm/lcm.h>"));
    for f in [
        "typedef struct _seed_path_t_subscription_t seed_path_t_subscription_t;",
        "typedef void(*seed_path_t_handler_t)(\n    const lcm_recv_buf_t *rbuf, const char *channel,\n    const seed_path_t *msg, void *userdata);",
        "int seed_path_t_publish(lcm_t *lcm, const char *channel, const seed_path_t *msg);",
        "seed_path_t_subscription_t* seed_path_t_subscribe(\n    lcm_t *lcm, const char *channel, seed_path_t_handler_t handler, void *userdata);",
        "int seed_path_t_unsubscribe(lcm_t *lcm, seed_path_t_subscription_t* hid);",
        "int seed_path_t_subscription_set_queue_capacity(\n    seed_path_t_subscription_t* subs, int num_messages);",
    ] {
        assert!(h.contains(f), "missing {f}");
    }
    let c = file(&files, "seed_path_t.c");
    for call in [
        "lcm_publish(lc, channel, buf,",
        "lcm_subscribe(lcm, channel, seed_path_t_handler_stub, n)",
        "lcm_unsubscribe(lcm, hid->lc_h)",
        "lcm_subscription_set_queue_capacity(subs->lc_h, num_messages)",
    ] {
        assert!(c.contains(call), "missing {call}");
    }
}

#[test]
fn fixed_size_types_get_inline_raw_functions() {
    let files = generate("package l; struct p_t { float position[3]; byte intensity; }");
    let h = file(&files, "l_p_t.h");
    assert!(h.contains("static inline void __l_p_t_encode_raw(uint8_t *b, const l_p_t *q)"));
    assert!(h.contains("static inline void __l_p_t_decode_raw(const uint8_t *b, l_p_t *q)"));
    assert!(file(&files, "l_p_t.c").contains("(size_t) elements > (size_t) maxlen / 13"));
}

#[test]
fn c_keywords_as_member_names_are_errors() {
    let checked = check(&[Source { path: "k.lcm".into(), text: "struct k_t { int32_t switch; }".into() }], &[])
        .expect("lcm accepts it");
    let e = c::generate(&Input::new(&checked), &Options::default()).unwrap_err();
    assert!(e.message.contains("'switch' is a C keyword"), "{e}");
}

/// Compiles the generated code with a small program that round-trips a path and rejects truncations.
#[test]
fn generated_code_compiles_pedantic_and_round_trips() {
    let main = r#"
#include <stdio.h>
#include <string.h>
#include "seed_path_t.h"
int main(void)
{
    seed_waypoint_t w[2];
    double grid[2][3] = {{1, 2, 3}, {4, 5, 6}};
    double *rows[2];
    seed_path_t p, d;
    uint8_t buf[256];
    int n, i, k;
    char a[] = "first", b[] = "";
    w[0].id = a; w[0].position[0] = 1.5f; w[0].position[1] = -2;
    w[1].id = b; w[1].position[0] = 0; w[1].position[1] = 0.5f;
    rows[0] = grid[0]; rows[1] = grid[1];
    memset(&p, 0, sizeof p);
    p.timestamp = 1234567890123LL; p.num_waypoints = 2; p.waypoints = w; p.grid = rows; p.ok = 1;
    p.raw[0] = 0; p.raw[1] = 255;
    n = seed_path_t_encode(buf, 0, sizeof buf, &p);
    if (n != seed_path_t_encoded_size(&p)) return 1;
    if (seed_path_t_decode(buf, 0, n, &d) != n) return 2;
    if (strcmp(d.waypoints[0].id, "first") || d.waypoints[1].id[0] || d.grid[1][2] != 6 || d.raw[1] != 255)
        return 3;
    seed_path_t_decode_cleanup(&d);
    for (k = 0; k < n; k++)
        if (seed_path_t_decode(buf, 0, k, &d) >= 0) return 4;
    for (i = 0; i < 4; i++) buf[16 + i] = 0xff; /* num_waypoints = -1 */
    if (seed_path_t_decode(buf, 0, n, &d) != NERVE_LCM_ELENGTH) return 5;
    return 0;
}
"#;
    let (dir, exe) = build_c("gen", SEED, main, &["-O1"]);
    let status = Command::new(&exe).status().unwrap();
    assert!(status.success(), "round trip failed: {status}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `_decode` puts all of a message's strings and arrays in one allocation (`_nerve_block`), which
/// `_decode_cleanup` frees; a copy's parts are its own; a message whose parts outgrow the block's first guess is
/// decoded part by part instead. Run under AddressSanitizer with leak detection: every path frees exactly what it
/// allocated.
#[test]
fn decoded_messages_live_in_one_block_and_every_path_frees_it() {
    let types = format!("{SEED}\nstruct sparse_t {{ int32_t n; int32_t m; int8_t cells[n][m]; string tag; }}");
    let main = r#"
#include <string.h>
#include "seed_path_t.h"
#include "seed_sparse_t.h"
int main(void)
{
    seed_waypoint_t w[3];
    double grid[3][3] = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
    double *rows[3];
    seed_path_t p, d, *c;
    seed_sparse_t s, t;
    uint8_t buf[512];
    const uint8_t *lo, *hi;
    int n, i;
    char a[] = "first", b[] = "", e[] = "a longer name than the others";
    w[0].id = a; w[1].id = b; w[2].id = e;
    for (i = 0; i < 3; i++) { w[i].position[0] = (float) i; w[i].position[1] = 0.5f; rows[i] = grid[i]; }
    memset(&p, 0, sizeof p);
    p.num_waypoints = 3; p.waypoints = w; p.grid = rows;
    n = seed_path_t_encode(buf, 0, sizeof buf, &p);
    if (n <= 0 || seed_path_t_decode(buf, 0, n, &d) != n) return 1;
    /* one block: every part of the decoded message inside it, the first part at its start */
    if (!d._nerve_block || (void *) d.waypoints != d._nerve_block) return 2;
    lo = (const uint8_t *) d._nerve_block;
    hi = lo + 5 * n + 256; /* the block is at most about 4x the message */
    for (i = 0; i < 3; i++) {
        const uint8_t *id = (const uint8_t *) d.waypoints[i].id, *row = (const uint8_t *) d.grid[i];
        if (id < lo || id >= hi || row < lo || row >= hi || d.waypoints[i]._nerve_block) return 3;
    }
    if (strcmp(d.waypoints[2].id, e) || d.grid[2][1] != 8) return 4;
    /* a copy owns its parts one by one, and is destroyed part by part */
    c = seed_path_t_copy(&d);
    if (!c || c->_nerve_block || c->waypoints == d.waypoints || strcmp(c->waypoints[0].id, a)) return 5;
    seed_path_t_destroy(c);
    seed_path_t_decode_cleanup(&d);
    if (d.waypoints || d._nerve_block) return 6;
    seed_path_t_decode_cleanup(&d); /* a second cleanup is harmless */
    /* 4000 empty rows: 4000 row pointers from a few bytes, more than the block's first guess */
    memset(&s, 0, sizeof s);
    s.n = 4000; s.m = 0; s.tag = a;
    s.cells = (int8_t **) calloc(4000, sizeof(int8_t *));
    if (!s.cells) return 7;
    n = seed_sparse_t_encode(buf, 0, sizeof buf, &s);
    free(s.cells);
    if (n <= 0 || seed_sparse_t_decode(buf, 0, n, &t) != n) return 8;
    if (t._nerve_block || !t.cells || t.n != 4000 || strcmp(t.tag, a)) return 9;
    seed_sparse_t_decode_cleanup(&t);
    /* and a decode that fails part-way (the last byte missing) leaves nothing allocated */
    n = seed_path_t_encode(buf, 0, sizeof buf, &p);
    if (seed_path_t_decode(buf, 0, n - 1, &d) >= 0 || d.waypoints || d._nerve_block) return 10;
    return 0;
}
"#;
    let (dir, exe) = build_c("block", &types, main, &[&["-O1"], SANITIZE].concat());
    let run = Command::new(&exe).env("ASAN_OPTIONS", "detect_leaks=1").output().unwrap();
    assert!(run.status.success(), "exit {:?}\n{}", run.status.code(), String::from_utf8_lossy(&run.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The SSSE3 paths of nerve_lcm.h (array byte swaps, and one shuffle per element for arrays of small all-number
/// structs) give exactly what the scalar loops give, at every length around their thresholds, under
/// AddressSanitizer (the 16-byte loads and stores stay inside the arrays). On a CPU without SSSE3 both sides are
/// the scalar loops.
#[test]
fn ssse3_paths_match_the_scalar_loops() {
    let types = "package t; struct p_t { float position[3]; byte intensity; }
        struct q_t { int16_t a; int32_t b; int8_t c; }";
    let main = r#"
#include <stdio.h>
#include <string.h>
#include "t_p_t.h"
#include "t_q_t.h"
static uint8_t src[2048], out[2048], ref[2048];
#define CHECK(TYPE, SIZE)                                                                              \
    for (n = 0; n < 40; n++) {                                                                      \
        TYPE a[40], b[40];                                                                          \
        size_t i, k;                                                                                \
        memset(a, 0, sizeof a);                                                                     \
        memset(b, 0, sizeof b);                                                                     \
        for (i = 0; i < n; i++)                                                                     \
            __##TYPE##_decode_raw(src + 3 + i * SIZE, &a[i]);                                       \
        for (k = __##TYPE##_decode_shuffled(src + 3, n * SIZE, b, n); k < n; k++)                   \
            __##TYPE##_decode_raw(src + 3 + k * SIZE, &b[k]);                                       \
        if (n > 2 && nerve_lcm_has_simd() && k == 0) return 10;                                     \
        for (i = 0; i < n; i++) {                                                                   \
            uint8_t x[SIZE], y[SIZE];                                                               \
            __##TYPE##_encode_raw(x, &a[i]);                                                        \
            __##TYPE##_encode_raw(y, &b[i]);                                                        \
            if (memcmp(x, y, SIZE)) return 11;                                                      \
        }                                                                                           \
        memset(out, 0xaa, sizeof out);                                                              \
        memset(ref, 0xaa, sizeof ref);                                                              \
        for (i = 0; i < n; i++)                                                                     \
            __##TYPE##_encode_raw(ref + i * SIZE, &a[i]);                                           \
        for (k = __##TYPE##_encode_shuffled(out, a, n); k < n; k++)                                 \
            __##TYPE##_encode_raw(out + k * SIZE, &a[k]);                                           \
        if (memcmp(out, ref, sizeof out)) return 12;                                                \
    }
static int nerve_lcm_has_simd(void)
{
#if NERVE_LCM_SSSE3
    return nerve_lcm_has_ssse3();
#else
    return 0;
#endif
}
int main(void)
{
    size_t n, i, j, e;
    for (i = 0; i < sizeof src; i++) src[i] = (uint8_t) (i * 131 + 7);
    for (e = 2; e <= 8; e *= 2)
        for (n = 0; n < 100; n++) {
            memset(out, 0xaa, sizeof out);
            memset(ref, 0xaa, sizeof ref);
            for (i = 0; i < n; i++)
                for (j = 0; j < e; j++) ref[i * e + j] = src[1 + i * e + e - 1 - j];
            if (e == 2) nerve_lcm_put_array2(out, src + 1, n);
            if (e == 4) nerve_lcm_get_array4(src + 1, out, n);
            if (e == 8) nerve_lcm_put_array8(out, src + 1, n);
            if (memcmp(out, ref, sizeof out)) return 1;
        }
    CHECK(t_p_t, 13)
    CHECK(t_q_t, 7)
    printf("%d\n", nerve_lcm_has_simd() != 0);
    return 0;
}
"#;
    let (dir, exe) = build_c("simd", types, main, &[&["-O2"], SANITIZE].concat());
    let run = Command::new(&exe).output().unwrap();
    assert!(
        run.status.success(),
        "SIMD and scalar paths differ: {}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
