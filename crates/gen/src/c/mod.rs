//! The C generator: `<pkg>_<name>.h` / `.c` per struct, API-compatible with what lcm-gen 1.5.3 writes for `-c`.
//!
//! # What it writes
//!
//! For a struct `pkg.name_t` the C name is `pkg_name_t` (dots become underscores, `--package-prefix` goes in
//! front). The header declares `typedef struct _pkg_name_t {...} pkg_name_t;` with lcm-gen's member layout (and
//! Nerve's `_nerve_block` after it on types with strings or variable arrays; see "Decoding into one block") (a
//! scalar as itself; an array whose dimensions are all fixed as a C array `x[2][3]`; an array with any variable
//! dimension as a pointer per dimension, `double **x`; `string` as `char*`, `byte` as `uint8_t`, `boolean` as
//! `int8_t`), constants as `#define PKG_NAME_T_<const name> <literal as written>`, doc comments carried over, and
//! lcm-gen's functions with the same signatures: `_encode`, `_decode`, `_decode_cleanup`, `_encoded_size`, `_copy`,
//! `_destroy`, `_struct_size`, `__pkg_name_t_get_hash`, and the `__pkg_name_t_{encode,decode,decode_cleanup,
//! encoded_size,clone}_array` internals that one type's code calls for another. Users switch from lcm-gen by
//! regenerating.
//!
//! # Publish and subscribe
//!
//! As lcm-gen does, each type also gets `_publish`, `_subscribe` (with a typed `_handler_t`), `_unsubscribe`,
//! `_subscription_set_queue_capacity` and the opaque `_subscription_t`, written against `<lcm/lcm.h>`: they call
//! `lcm_publish` / `lcm_subscribe` / `lcm_unsubscribe` / `lcm_subscription_set_queue_capacity`, so the code links
//! against any library with LCM's C API (the real liblcm, or an LCM-compatible one). A handler's message is
//! decoded before the call and cleaned up after it, as lcm-gen's is; a message that does not decode is reported on
//! stderr and not handed over. `--c-no-pubsub` ([`Options::c_pubsub`]) leaves all of this out, and the generated
//! code then needs no LCM header or library.
//!
//! Besides the C library and (for publish/subscribe) `<lcm/lcm.h>`, the generated code includes only `nerve_lcm.h`,
//! the runtime header embedded here and emitted next to the headers. All its names start with `nerve_lcm_`, so it
//! shares a translation unit with liblcm's own headers.
//!
//! # Decoding untrusted bytes
//!
//! Every count and string length is checked against the bytes that remain before anything is allocated, read or
//! copied: a count must be non-negative and its elements (at their least encoded size, from [`nerve_types::Layout`])
//! must fit in what remains; a string's length must be at least 1, fit, and end in its only NUL. On any error a
//! decoder frees what it allocated, zeroes the struct (so a stray `_decode_cleanup` is harmless) and returns a
//! negative `NERVE_LCM_E*` code. Strings are not checked for valid UTF-8, as liblcm does not: C treats them as bytes.
//! A string holding a NUL before its end is rejected, since a C string cannot carry it and re-encoding would change
//! the message.
//!
//! # Decoding into one block
//!
//! liblcm's `_decode` makes one allocation per string and per array; Nerve's makes one for the whole message: it
//! decodes into an arena over a block sized from the encoded bytes (`maxlen` times the most any variable array of
//! the type takes in C per encoded byte, from [`nerve_types::Layout`]; see `block_ratio8`), and keeps the block in
//! the member `_nerve_block`, which every type with strings or variable arrays gets after lcm-gen's members.
//! `_decode_cleanup` frees that block (and zeroes the struct); a message whose parts did not fit the guess is
//! decoded part by part instead, `_nerve_block` NULL, and cleaned up part by part, as `_copy`'s copies are. So a
//! decoded message's strings and arrays must not be freed or replaced one by one (liblcm allows it); everything
//! else about the API is lcm-gen's. On path_t (50 strings) this is what takes the decode from liblcm's speed to a
//! third of its time. A type whose part-by-part decode is already one allocation (one variable array of numbers
//! or fixed-size structs and nothing else that allocates: laser_t, image_t, a LiDAR message) skips the block: its
//! `_decode` mallocs exactly the array, with no size guess, arena or second path (`single_allocation`).
//!
//! # Decoding without malloc
//!
//! Besides lcm-gen's API each type gets `pkg_name_t_decode_arena(buf, offset, maxlen, msg, arena)`: the same
//! checks and result as `_decode`, but every string and variable array is carved from a caller-owned
//! `nerve_lcm_arena` (declared in `nerve_lcm.h`) instead of `malloc`, so a real-time loop can decode with no
//! allocation at all. The caller resets the arena before each decode and never calls `_decode_cleanup` on such a
//! message. The `__pkg_name_t_decode_array_a` internals carry the arena (NULL means malloc) through nested types;
//! `__pkg_name_t_decode_array` keeps lcm-gen's signature.
//!
//! # Speed
//!
//! A type whose encoded size is fixed gets `static inline` raw encode/decode functions in its header, so an array
//! of such structs costs one bounds check and then a tight loop; consecutive fixed-size members share one bounds
//! check; primitive arrays are one byte-swapping loop the compiler vectorises; a variable array takes one
//! allocation, never one per fixed-size element. A fixed-size type whose members are all numbers and that fits in
//! 16 bytes encoded and in memory (a LiDAR point: 13 and 16) also gets `__T_decode_shuffled` /
//! `__T_encode_shuffled`: its arrays are encoded and decoded with one SSSE3 `pshufb` per element
//! (`nerve_lcm_shuffle`, compiled for SSSE3 alone and called when the CPU has it; GCC and Clang on x86-64), the
//! mask written out for the layout the x86-64 ABIs give and used only when `offsetof` confirms it.

mod decl;
mod decode;
mod encode;
mod glue;
mod memory;

use std::fmt::Write as _;
use std::path::PathBuf;

use nerve_types::{Dim, Member, MemberType, Primitive, Struct, TypeName};

use crate::plan::{self, Seg, StructPlan};
use crate::writer::CodeWriter;
use crate::{GenError, GeneratedFile, Input, Options};
use glue::{pubsub_declarations, pubsub_definitions};

/// The runtime header that generated C code includes.
pub const RUNTIME_HEADER: &str = include_str!("../../runtime/c/nerve_lcm.h");

/// The file name of [`RUNTIME_HEADER`].
pub const RUNTIME_HEADER_NAME: &str = "nerve_lcm.h";

/// The member every type with strings or variable arrays gets after its own: the block `_decode` put them in.
const BLOCK_MEMBER: &str = "_nerve_block";

const C_KEYWORDS: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Bool",
    "_Complex",
    "_Imaginary",
];

/// Generates a header and a source file for every input struct, plus `nerve_lcm.h`. Paths ending in `.c` belong in
/// the C source directory, the others in the header directory.
pub fn generate(input: &Input<'_>, opts: &Options) -> Result<Vec<GeneratedFile>, GenError> {
    if let Some(e) = input.enums().first() {
        return Err(GenError {
            span: e.span.clone(),
            language: "c",
            message: format!("enum {} (deprecated in LCM) is not supported by the C generator", e.name),
        });
    }
    let g = Gen { input, opts };
    let mut files = Vec::new();
    for s in input.structs() {
        g.check_names(s)?;
        let name = g.cname(&s.name);
        files.push(GeneratedFile { path: PathBuf::from(format!("{name}.h")), contents: g.header(s) });
        files.push(GeneratedFile { path: PathBuf::from(format!("{name}.c")), contents: g.source(s) });
    }
    files.push(GeneratedFile { path: PathBuf::from(RUNTIME_HEADER_NAME), contents: RUNTIME_HEADER.to_owned() });
    Ok(files)
}

/// How one element of a member is marshalled.
#[derive(Clone)]
enum Elem {
    /// A non-string primitive: its C type, helper suffix (`int32_t`, `byte`, ...) and wire size.
    Prim { ctype: &'static str, helper: &'static str, size: usize },
    /// A string (`char*`).
    Str,
    /// A struct whose encoded size is fixed.
    Fixed { cname: String, size: usize },
    /// A struct whose encoded size varies.
    Var { cname: String },
}

impl Elem {
    fn ctype(&self) -> String {
        match self {
            Elem::Prim { ctype, .. } => (*ctype).to_owned(),
            Elem::Str => "char*".to_owned(),
            Elem::Fixed { cname, .. } | Elem::Var { cname } => cname.clone(),
        }
    }

    /// The C type used inside the struct when the member is a pointer (structs by tag, so no include is needed).
    fn ptr_base(&self) -> String {
        match self {
            Elem::Fixed { cname, .. } | Elem::Var { cname } => format!("struct _{cname}"),
            _ => self.ctype(),
        }
    }

    /// Whether an element owns memory (so arrays of it are zeroed before they are filled).
    fn owns(&self) -> bool {
        matches!(self, Elem::Str | Elem::Var { .. })
    }
}

struct Gen<'a> {
    input: &'a Input<'a>,
    opts: &'a Options,
}

fn array_helper(size: usize) -> String {
    format!("array{size}")
}

/// The first lines of every generated file (lcm-gen's, naming the input file).
fn banner(w: &mut CodeWriter, s: &Struct) {
    w.line("// THIS IS AN AUTOMATICALLY GENERATED FILE.  DO NOT MODIFY");
    w.line("// BY HAND!!");
    w.line("//");
    w.line(format!("// Generated by nerve gen (LCM-compatible C) from {}", s.span.file.display()));
    w.blank();
}

/// Escapes text for a `/* */` comment.
fn comment_text(s: &str) -> String {
    s.replace("*/", "* /").replace("/*", "/ *")
}

impl<'a> Gen<'a> {
    fn cname(&self, n: &TypeName) -> String {
        let mut full = String::new();
        if !self.opts.package_prefix.is_empty() {
            full.push_str(&self.opts.package_prefix);
            full.push('.');
        }
        full.push_str(&n.full());
        full.replace('.', "_")
    }

    fn check_names(&self, s: &Struct) -> Result<(), GenError> {
        let bad = |span: &nerve_types::Span, what: &str, name: &str| GenError {
            span: span.clone(),
            language: "c",
            message: format!("{what} '{name}' is a C keyword"),
        };
        for m in &s.members {
            if C_KEYWORDS.contains(&m.name.as_str()) {
                return Err(bad(&m.span, "member", &m.name));
            }
            if m.name == BLOCK_MEMBER {
                return Err(GenError {
                    span: m.span.clone(),
                    language: "c",
                    message: format!("member '{BLOCK_MEMBER}' is the name of the member Nerve's C code adds"),
                });
            }
        }
        for part in s.name.package_path().into_iter().chain([s.name.name.as_str()]) {
            if C_KEYWORDS.contains(&part) {
                return Err(bad(&s.span, "type name part", part));
            }
        }
        Ok(())
    }

    fn elem(&self, ty: &MemberType) -> Elem {
        match plan::Elem::of(&self.input.layout, ty) {
            plan::Elem::Prim(p) => match p {
                Primitive::Int8 => Elem::Prim { ctype: "int8_t", helper: "int8_t", size: 1 },
                Primitive::Int16 => Elem::Prim { ctype: "int16_t", helper: "int16_t", size: 2 },
                Primitive::Int32 => Elem::Prim { ctype: "int32_t", helper: "int32_t", size: 4 },
                Primitive::Int64 => Elem::Prim { ctype: "int64_t", helper: "int64_t", size: 8 },
                Primitive::Float => Elem::Prim { ctype: "float", helper: "float", size: 4 },
                Primitive::Double => Elem::Prim { ctype: "double", helper: "double", size: 8 },
                Primitive::Boolean => Elem::Prim { ctype: "int8_t", helper: "boolean", size: 1 },
                Primitive::Byte => Elem::Prim { ctype: "uint8_t", helper: "byte", size: 1 },
                Primitive::String => Elem::Str,
            },
            plan::Elem::Str => Elem::Str,
            // Enums are rejected in `generate`; treat one as its int32 value if it ever gets here.
            plan::Elem::Enum => Elem::Prim { ctype: "int32_t", helper: "int32_t", size: 4 },
            plan::Elem::Struct { fixed, .. } => {
                let MemberType::Struct(name) = ty else { unreachable!("a struct element has a struct type") };
                let cname = self.cname(name);
                match fixed {
                    Some(size) => Elem::Fixed { cname, size },
                    None => Elem::Var { cname },
                }
            }
        }
    }

    fn fixed_size(&self, s: &Struct) -> Option<usize> {
        self.input.layout.fixed_size(&s.name)
    }

    /// The struct named `name` in the schema.
    fn struct_named(&self, name: &TypeName) -> Option<&Struct> {
        self.input.checked.schema.structs.iter().find(|s| &s.name == name)
    }

    /// About how many bytes one `ty` takes in C, and its alignment: members at their natural alignment, a pointer
    /// per string or variable array, the block member of a type with either. It only sizes `_decode`'s block, which
    /// a wrong guess makes either a little larger than needed or too small (then the decode goes part by part).
    fn c_layout(&self, ty: &MemberType) -> (usize, usize) {
        match ty {
            MemberType::Primitive(_) => match self.elem(ty) {
                Elem::Prim { size, .. } => (size, size),
                _ => (8, 8),
            },
            MemberType::Enum(_) => (4, 4),
            MemberType::Struct(n) => {
                let Some(st) = self.struct_named(n) else { return (8, 8) };
                let (mut size, mut align) = (0usize, 1usize);
                let mut place = |(s, a): (usize, usize)| {
                    size = size.div_ceil(a) * a + s;
                    align = align.max(a);
                };
                for m in &st.members {
                    if m.all_dims_fixed() {
                        let (s, a) = self.c_layout(&m.ty);
                        place((s * plan::fixed_count(m), a));
                    } else {
                        place((8, 8));
                    }
                }
                if self.fixed_size(st).is_none() {
                    place((8, 8));
                }
                (size.max(1).div_ceil(align) * align, align)
            }
        }
    }

    /// How large a block `_decode` first tries for a message of `s`, per encoded byte, in eighths: the most that
    /// an element of any variable array in it (or in the types it holds) takes in C per byte it takes encoded;
    /// strings and primitive arrays take no more than encoded. At least 1x, at most 4x (a type that needs more is
    /// decoded part by part rather than allocate so much on a guess).
    fn block_ratio8(&self, s: &Struct) -> usize {
        let mut ratio = 8;
        let mut seen: Vec<&TypeName> = vec![&s.name];
        let mut todo: Vec<&Struct> = vec![s];
        while let Some(st) = todo.pop() {
            for m in &st.members {
                let MemberType::Struct(n) = &m.ty else { continue };
                if !m.all_dims_fixed() {
                    let min = self.input.layout.elem_min_size(&m.ty).max(1);
                    ratio = ratio.max((8 * self.c_layout(&m.ty).0).div_ceil(min));
                }
                if let Some(inner) = self.struct_named(n) {
                    if !seen.contains(&&inner.name) {
                        seen.push(&inner.name);
                        todo.push(inner);
                    }
                }
            }
        }
        ratio.min(32)
    }

    /// Whether decoding `s` part by part makes exactly one allocation: one one-dimensional variable array of
    /// numbers or of fixed-size structs, and nothing else that allocates (no strings, no members of a type with
    /// strings or variable arrays). laser_t's ranges, image_t's data, a LiDAR message's points.
    fn single_allocation(&self, s: &Struct) -> bool {
        let mut arrays = 0;
        for m in &s.members {
            let elem_fixed = match &m.ty {
                MemberType::Primitive(p) => *p != Primitive::String,
                MemberType::Enum(_) => true,
                MemberType::Struct(n) => self.struct_named(n).is_some_and(|t| self.fixed_size(t).is_some()),
            };
            if !elem_fixed {
                return false;
            }
            if !m.all_dims_fixed() {
                if m.dims.len() != 1 {
                    return false;
                }
                arrays += 1;
            }
        }
        arrays == 1
    }

    /// Whether a member owns memory that cleanup must free.
    fn member_owns(&self, m: &Member) -> bool {
        !m.all_dims_fixed() || self.elem(&m.ty).owns()
    }

    // ---------------------------------------------------------------------------------------------- source

    fn source(&self, s: &Struct) -> String {
        let name = self.cname(&s.name);
        let mut w = CodeWriter::new("    ");
        banner(&mut w, s);
        if self.opts.c_pubsub {
            w.line("#include <stdio.h>");
        }
        w.line("#include <string.h>");
        w.line(format!("#include \"{name}.h\""));
        w.blank();
        w.block(format!("int64_t __{name}_get_hash(void)\n{{"), "}", |w| {
            w.line(format!("return (int64_t) UINT64_C(0x{:016x});", s.fingerprint));
        });
        w.blank();
        w.block(format!("size_t {name}_struct_size(void)\n{{"), "}", |w| {
            w.line(format!("return sizeof({name});"));
        });
        w.blank();
        match self.fixed_size(s) {
            Some(size) => self.fixed_array_functions(&mut w, s, size),
            None => self.var_array_functions(&mut w, s),
        }
        w.blank();
        self.top_functions(&mut w, s);
        if self.opts.c_pubsub {
            w.blank();
            w.lines(pubsub_definitions(&name));
        }
        w.finish()
    }

    fn top_functions(&self, w: &mut CodeWriter, s: &Struct) {
        let name = self.cname(&s.name);
        let ratio8 = self.block_ratio8(s);
        // A type with strings or variable arrays frees its block if `_decode` made one, its parts otherwise.
        let block_cleanup = format!(
            "    if (p->{BLOCK_MEMBER}) {{
        free(p->{BLOCK_MEMBER});
        memset(p, 0, sizeof({name}));
        return 0;
    }}
    return __{name}_decode_array_cleanup(p, 1);"
        );
        let (decode_body, cleanup_body) = if self.fixed_size(s).is_some() {
            (
                format!(
                    "    r = __{name}_decode_array(buf, offset + 8, maxlen - 8, p, 1);\n    return r < 0 ? r : r + 8;"
                ),
                format!("    return __{name}_decode_array_cleanup(p, 1);"),
            )
        } else if self.single_allocation(s) {
            // Part by part is already one allocation, of exactly the array's size: a block would add a size guess,
            // an arena and a second path for nothing (32 of lidar_10's 388 instructions of decode + cleanup).
            (
                format!(
                    "    /* One variable array, nothing else to allocate: decoded part by part, that is one malloc of
       exactly its size, freed by _decode_cleanup. */
    r = __{name}_decode_array(buf, offset + 8, maxlen - 8, p, 1);
    return r < 0 ? r : r + 8;"
                ),
                block_cleanup,
            )
        } else {
            (
                format!(
                    "    {{
        /* Every string and array of the message in one allocation (liblcm makes one per part), sized from the
           bytes it is decoded from; if that was too small, the message is decoded part by part. */
        size_t cap = (size_t) maxlen / 8 * {ratio8} + (size_t) maxlen / 8 + 64;
        void *block = malloc(cap);
        nerve_lcm_arena a;
        if (block) {{
            nerve_lcm_arena_init(&a, block, cap);
            r = __{name}_decode_array_a(buf, offset + 8, maxlen - 8, p, 1, &a);
            if (r >= 0) {{
                if (a.used)
                    p->{BLOCK_MEMBER} = block;
                else
                    free(block);
                return r + 8;
            }}
            free(block);
            if (r != NERVE_LCM_ENOMEM)
                return r;
        }}
    }}
    r = __{name}_decode_array(buf, offset + 8, maxlen - 8, p, 1);
    return r < 0 ? r : r + 8;"
                ),
                block_cleanup,
            )
        };
        w.lines(format!(
            "int {name}_encode(void *buf, int offset, int maxlen, const {name} *p)
{{
    int r;
    if (maxlen < 8)
        return NERVE_LCM_ENOSPACE;
    nerve_lcm_put_u64((uint8_t *) buf + offset, UINT64_C(0x{fp:016x}));
    r = __{name}_encode_array(buf, offset + 8, maxlen - 8, p, 1);
    return r < 0 ? r : r + 8;
}}

int {name}_decode(const void *buf, int offset, int maxlen, {name} *p)
{{
    int r;
    if (maxlen < 8) {{
        memset(p, 0, sizeof({name}));
        return NERVE_LCM_ENOSPACE;
    }}
    if (nerve_lcm_get_u64((const uint8_t *) buf + offset) != UINT64_C(0x{fp:016x})) {{
        memset(p, 0, sizeof({name}));
        return NERVE_LCM_EFINGERPRINT;
    }}
{decode_body}
}}

int {name}_decode_arena(const void *buf, int offset, int maxlen, {name} *p, nerve_lcm_arena *arena)
{{
    int r;
    if (maxlen < 8) {{
        memset(p, 0, sizeof({name}));
        return NERVE_LCM_ENOSPACE;
    }}
    if (nerve_lcm_get_u64((const uint8_t *) buf + offset) != UINT64_C(0x{fp:016x})) {{
        memset(p, 0, sizeof({name}));
        return NERVE_LCM_EFINGERPRINT;
    }}
    r = __{name}_decode_array_a(buf, offset + 8, maxlen - 8, p, 1, arena);
    return r < 0 ? r : r + 8;
}}

int {name}_decode_cleanup({name} *p)
{{
{cleanup_body}
}}

int {name}_encoded_size(const {name} *p)
{{
    return 8 + __{name}_encoded_array_size(p, 1);
}}

{name} *{name}_copy(const {name} *p)
{{
    {name} *q = ({name} *) malloc(sizeof({name}));
    if (!q)
        return NULL;
    if (__{name}_clone_array(p, q, 1) < 0) {{
        free(q);
        return NULL;
    }}
    return q;
}}

void {name}_destroy({name} *p)
{{
    if (!p)
        return;
    {name}_decode_cleanup(p);
    free(p);
}}",
            fp = s.fingerprint
        ));
    }

    /// The array functions of a type whose encoded size is fixed: one check, then the raw functions in a loop.
    fn fixed_array_functions(&self, w: &mut CodeWriter, s: &Struct, size: usize) {
        let name = self.cname(&s.name);
        let check = if size == 0 {
            "if (elements < 0)".to_owned()
        } else {
            format!("if (elements < 0 || maxlen < 0 || (size_t) elements > (size_t) maxlen / {size})")
        };
        w.lines(format!(
            "int __{name}_encode_array(void *buf, int offset, int maxlen, const {name} *p, int elements)
{{
    uint8_t *b = (uint8_t *) buf + offset;
    int e;
    (void) maxlen;
    {check}
        return NERVE_LCM_ENOSPACE;
    for (e = (int) __{name}_encode_shuffled(b, p, (size_t) elements); e < elements; e++)
        __{name}_encode_raw(b + (size_t) e * {size}, &p[e]);
    return elements * {size};
}}

int __{name}_decode_array(const void *buf, int offset, int maxlen, {name} *p, int elements)
{{
    const uint8_t *b = (const uint8_t *) buf + offset;
    int e;
    (void) maxlen;
    {check}
        return NERVE_LCM_ENOSPACE;
    for (e = (int) __{name}_decode_shuffled(b, (size_t) maxlen, p, (size_t) elements); e < elements; e++)
        __{name}_decode_raw(b + (size_t) e * {size}, &p[e]);
    return elements * {size};
}}

int __{name}_decode_array_a(const void *buf, int offset, int maxlen, {name} *p, int elements, nerve_lcm_arena *arena)
{{
    (void) arena;
    return __{name}_decode_array(buf, offset, maxlen, p, elements);
}}

int __{name}_decode_array_cleanup({name} *p, int elements)
{{
    (void) p;
    (void) elements;
    return 0;
}}

int __{name}_encoded_array_size(const {name} *p, int elements)
{{
    (void) p;
    return elements * {size};
}}

int __{name}_clone_array(const {name} *p, {name} *q, int elements)
{{
    if (elements > 0)
        memcpy(q, p, sizeof({name}) * (size_t) elements);
    return 0;
}}"
        ));
    }

    /// Runs of consecutive fixed-size members (one bounds check each) and single others.
    fn runs<'m>(&self, s: &'m Struct) -> Vec<Vec<&'m Member>> {
        let plan = StructPlan::new(&self.input.layout, s);
        plan.segments(&s.members)
            .into_iter()
            .map(|seg| match seg {
                Seg::Run(ms, _) => ms.iter().collect(),
                Seg::Var(m) => vec![m],
            })
            .collect()
    }

    fn var_array_functions(&self, w: &mut CodeWriter, s: &Struct) {
        let name = self.cname(&s.name);
        let runs = self.runs(s);

        // encode
        w.block(
            format!("int __{name}_encode_array(void *buf, int offset, int maxlen, const {name} *p, int elements)\n{{"),
            "}",
            |w| {
                w.line("uint8_t *b = (uint8_t *) buf + offset;");
                w.line("size_t rem = maxlen > 0 ? (size_t) maxlen : 0;");
                w.line("size_t pos = 0;");
                w.line("int e, r;");
                w.line("(void) r;");
                w.line("(void) b;");
                w.block("for (e = 0; e < elements; e++) {", "}", |w| {
                    w.line(format!("const {name} *q = &p[e];"));
                    for run in &runs {
                        self.encode_run(w, run);
                    }
                });
                w.line("return (int) pos;");
            },
        );
        w.blank();

        // decode (into malloc'd memory when arena is NULL, else into the arena)
        w.block(
            format!("int __{name}_decode_array(const void *buf, int offset, int maxlen, {name} *p, int elements)\n{{"),
            "}",
            |w| {
                w.line(format!("return __{name}_decode_array_a(buf, offset, maxlen, p, elements, NULL);"));
            },
        );
        w.blank();
        w.block(
            format!("int __{name}_decode_array_a(const void *buf, int offset, int maxlen, {name} *p, int elements, nerve_lcm_arena *arena)\n{{"),
            "}",
            |w| {
                w.line("const uint8_t *b = (const uint8_t *) buf + offset;");
                w.line("size_t rem = maxlen > 0 ? (size_t) maxlen : 0;");
                w.line("size_t pos = 0;");
                w.line("int e, r = 0;");
                w.line("(void) b;");
                w.block("for (e = 0; e < elements; e++) {", "}", |w| {
                    w.line(format!("{name} *q = &p[e];"));
                    w.line(format!("q->{BLOCK_MEMBER} = NULL;"));
                    // Members that own memory start empty, so a failure part-way can clean up this element.
                    for m in &s.members {
                        if self.member_owns(m) {
                            if !m.all_dims_fixed() || m.dims.is_empty() && matches!(self.elem(&m.ty), Elem::Str) {
                                w.line(format!("q->{} = NULL;", m.name));
                            } else if m.dims.is_empty() {
                                w.line(format!("memset(&q->{0}, 0, sizeof(q->{0}));", m.name));
                            } else {
                                w.line(format!("memset(q->{0}, 0, sizeof(q->{0}));", m.name));
                            }
                        }
                    }
                    for run in &runs {
                        self.decode_run(w, run);
                    }
                });
                w.line("return (int) pos;");
                w.dedent();
                w.line("fail:");
                w.indent();
                w.line("if (!arena)");
                w.line(format!("    __{name}_decode_array_cleanup(p, e + 1);"));
                w.line(format!("memset(p, 0, sizeof({name}) * (size_t) elements);"));
                w.line("return r;");
            },
        );
        w.blank();

        // cleanup
        w.block(format!("int __{name}_decode_array_cleanup({name} *p, int elements)\n{{"), "}", |w| {
            w.line("int e;");
            w.block("for (e = 0; e < elements; e++) {", "}", |w| {
                w.line(format!("{name} *q = &p[e];"));
                w.line("(void) q;");
                for m in &s.members {
                    if self.member_owns(m) {
                        self.cleanup_member(w, m);
                    }
                }
            });
            w.line("return 0;");
        });
        w.blank();

        // encoded size
        w.block(format!("int __{name}_encoded_array_size(const {name} *p, int elements)\n{{"), "}", |w| {
            w.line("size_t size = 0;");
            w.line("int e;");
            w.block("for (e = 0; e < elements; e++) {", "}", |w| {
                w.line(format!("const {name} *q = &p[e];"));
                w.line("(void) q;");
                for run in &runs {
                    self.size_run(w, run);
                }
            });
            w.line("return (int) size;");
        });
        w.blank();

        // clone
        w.block(format!("int __{name}_clone_array(const {name} *p, {name} *q, int elements)\n{{"), "}", |w| {
            w.line("int e, r = 0;");
            w.block("for (e = 0; e < elements; e++) {", "}", |w| {
                w.line(format!("const {name} *s = &p[e];"));
                w.line(format!("{name} *d = &q[e];"));
                w.line("*d = *s;");
                // A copy's parts are its own allocations (freed one by one), never the original's block.
                w.line(format!("d->{BLOCK_MEMBER} = NULL;"));
                for m in &s.members {
                    if self.member_owns(m) {
                        if !m.all_dims_fixed() || m.dims.is_empty() && matches!(self.elem(&m.ty), Elem::Str) {
                            w.line(format!("d->{} = NULL;", m.name));
                        } else if m.dims.is_empty() {
                            w.line(format!("memset(&d->{0}, 0, sizeof(d->{0}));", m.name));
                        } else {
                            w.line(format!("memset(d->{0}, 0, sizeof(d->{0}));", m.name));
                        }
                    }
                }
                for m in &s.members {
                    if self.member_owns(m) {
                        self.clone_member(w, m);
                    }
                }
            });
            w.line("return 0;");
            w.dedent();
            w.line("fail:");
            w.indent();
            w.line(format!("__{name}_decode_array_cleanup(q, e + 1);"));
            w.line(format!("memset(q, 0, sizeof({name}) * (size_t) elements);"));
            w.line("return r;");
        });
    }

    /// The expression for the size of dimension `d` of a member of `q` (never negative).
    fn dim_count(d: &Dim, q: &str) -> String {
        match d {
            Dim::Fixed { len, .. } => format!("(size_t) {len}"),
            Dim::Variable { member } => format!("(size_t) ({q}->{member} > 0 ? {q}->{member} : 0)"),
        }
    }
}
