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

use std::fmt::Write as _;
use std::path::PathBuf;

use nerve_types::{Dim, Member, MemberType, Primitive, Struct, TypeName};

use crate::plan::{self, Seg, StructPlan};
use crate::writer::CodeWriter;
use crate::{GenError, GeneratedFile, Input, Options};

/// The runtime header that generated C code includes.
pub const RUNTIME_HEADER: &str = include_str!("../runtime/c/nerve_lcm.h");

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

/// lcm-gen's publish/subscribe declarations for C type `name` (its comments, its signatures).
fn pubsub_declarations(name: &str) -> String {
    format!(
        "/**
 * Identifies a single subscription.  This is an opaque data type.
 */
typedef struct _{name}_subscription_t {name}_subscription_t;

/**
 * Prototype for a callback function invoked when a message of type
 * {name} is received.
 */
typedef void(*{name}_handler_t)(
    const lcm_recv_buf_t *rbuf, const char *channel,
    const {name} *msg, void *userdata);

/**
 * Publish a message of type {name} using LCM.
 *
 * @param lcm The LCM instance to publish with.
 * @param channel The channel to publish on.
 * @param msg The message to publish.
 * @return 0 on success, <0 on error.  Success means LCM has transferred
 * responsibility of the message data to the OS.
 */
int {name}_publish(lcm_t *lcm, const char *channel, const {name} *msg);

/**
 * Subscribe to messages of type {name} using LCM.
 *
 * @param lcm The LCM instance to subscribe with.
 * @param channel The channel to subscribe to.
 * @param handler The callback function invoked by LCM when a message is
 *     received. This function is invoked by LCM during calls to lcm_handle()
 *     and lcm_handle_timeout(). The message is valid only during the call.
 * @param userdata An opaque pointer passed to @p handler when it is invoked.
 * @return the subscription, or NULL if an error occured
 */
{name}_subscription_t* {name}_subscribe(
    lcm_t *lcm, const char *channel, {name}_handler_t handler, void *userdata);

/**
 * Removes and destroys a subscription created by {name}_subscribe()
 */
int {name}_unsubscribe(lcm_t *lcm, {name}_subscription_t* hid);

/**
 * Sets the queue capacity for a subscription: how many messages are
 * queued on it before messages are dropped (see
 * lcm_subscription_set_queue_capacity()).
 *
 * @param subs the subscription to modify.
 * @param num_messages The maximum number of messages to queue
 *  on the subscription.
 * @return 0 on success, <0 if an error occured
 */
int {name}_subscription_set_queue_capacity(
    {name}_subscription_t* subs, int num_messages);"
    )
}

/// lcm-gen's publish/subscribe functions for C type `name`, over `lcm_publish` / `lcm_subscribe`. Unlike lcm-gen's,
/// `_subscribe` checks its malloc and `_unsubscribe` a NULL subscription.
fn pubsub_definitions(name: &str) -> String {
    format!(
        "int {name}_publish(lcm_t *lc, const char *channel, const {name} *p)
{{
    int status;
    int data_size;
    int max_data_size = {name}_encoded_size(p);
    uint8_t *buf;
    if (max_data_size < 0)
        return max_data_size;
    buf = (uint8_t *) malloc((size_t) max_data_size);
    if (!buf)
        return -1;
    data_size = {name}_encode(buf, 0, max_data_size, p);
    if (data_size < 0) {{
        free(buf);
        return data_size;
    }}
    status = lcm_publish(lc, channel, buf, (unsigned int) data_size);
    free(buf);
    return status;
}}

struct _{name}_subscription_t {{
    {name}_handler_t user_handler;
    void *userdata;
    lcm_subscription_t *lc_h;
}};

static void {name}_handler_stub(const lcm_recv_buf_t *rbuf, const char *channel, void *userdata)
{{
    int status;
    {name} p;
    {name}_subscription_t *h = ({name}_subscription_t *) userdata;
    memset(&p, 0, sizeof({name}));
    status = {name}_decode(rbuf->data, 0, (int) rbuf->data_size, &p);
    if (status < 0) {{
        fprintf(stderr, \"error %d decoding {name}!!!\\n\", status);
        return;
    }}
    h->user_handler(rbuf, channel, &p, h->userdata);
    {name}_decode_cleanup(&p);
}}

{name}_subscription_t *{name}_subscribe(lcm_t *lcm, const char *channel, {name}_handler_t f, void *userdata)
{{
    {name}_subscription_t *n = ({name}_subscription_t *) malloc(sizeof({name}_subscription_t));
    if (!n)
        return NULL;
    n->user_handler = f;
    n->userdata = userdata;
    n->lc_h = lcm_subscribe(lcm, channel, {name}_handler_stub, n);
    if (n->lc_h == NULL) {{
        fprintf(stderr, \"couldn't reg {name} LCM handler!\\n\");
        free(n);
        return NULL;
    }}
    return n;
}}

int {name}_subscription_set_queue_capacity({name}_subscription_t *subs, int num_messages)
{{
    if (!subs)
        return -1;
    return lcm_subscription_set_queue_capacity(subs->lc_h, num_messages);
}}

int {name}_unsubscribe(lcm_t *lcm, {name}_subscription_t *hid)
{{
    int status;
    if (!hid)
        return -1;
    status = lcm_unsubscribe(lcm, hid->lc_h);
    if (0 != status) {{
        fprintf(stderr, \"couldn't unsubscribe {name}_handler %p!\\n\", (void *) hid);
        return -1;
    }}
    free(hid);
    return 0;
}}"
    )
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
            plan::Elem::Struct { name, fixed: Some(size), .. } => Elem::Fixed { cname: self.cname(name), size },
            plan::Elem::Struct { name, fixed: None, .. } => Elem::Var { cname: self.cname(name) },
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
                        place((s * Self::fixed_count(m), a));
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

    // ---------------------------------------------------------------------------------------------- header

    fn header(&self, s: &Struct) -> String {
        let name = self.cname(&s.name);
        let mut w = CodeWriter::new("    ");
        w.line("// THIS IS AN AUTOMATICALLY GENERATED FILE.  DO NOT MODIFY");
        w.line("// BY HAND!!");
        w.line("//");
        w.line(format!("// Generated by nerve gen (LCM-compatible C) from {}", s.span.file.display()));
        w.blank();
        w.line(format!("#ifndef _{name}_h"));
        w.line(format!("#define _{name}_h"));
        w.blank();
        w.line("#include <stdint.h>");
        w.line("#include <stdlib.h>");
        w.line("#include \"nerve_lcm.h\"");
        if self.opts.c_pubsub {
            w.line("#include <lcm/lcm.h>");
        }
        w.blank();
        w.line("#ifdef __cplusplus");
        w.line("extern \"C\" {");
        w.line("#endif");
        w.blank();
        for c in &s.consts {
            if let Some(d) = &c.doc {
                self.block_doc(&mut w, d, None);
            }
            let text = match c.value {
                // lcm-gen writes `-9223372036854775808LL`, whose literal does not fit a long long.
                nerve_types::ConstValue::Int(i64::MIN) => "(-9223372036854775807LL - 1)".to_owned(),
                _ if c.ty == Primitive::Int64 => format!("{}LL", c.text),
                _ => c.text.clone(),
            };
            w.line(format!("#define {}_{} {}", name.to_uppercase(), c.name, text));
        }
        if !s.consts.is_empty() {
            w.blank();
        }
        if let Some(d) = &s.doc {
            self.block_doc(&mut w, d, None);
        }
        w.line(format!("typedef struct _{name} {name};"));
        // Types held by value must be complete before the struct; those behind pointers are included at the end,
        // so that recursive and mutually recursive types compile whichever header is included first.
        let (by_value, by_ptr) = self.deps(s);
        for d in &by_value {
            w.line(format!("#include \"{d}.h\""));
        }
        w.line(format!("struct _{name}"));
        w.line("{");
        w.indent();
        if s.members.is_empty() {
            w.line("/** C forbids a struct without members; this one is never encoded. */");
            w.line("uint8_t _nerve_empty;");
        }
        for m in &s.members {
            let e = self.elem(&m.ty);
            let is_array = !m.dims.is_empty();
            if m.doc.is_some() || is_array {
                let mut lcm_type = String::new();
                if is_array {
                    let tn = match &m.ty {
                        MemberType::Primitive(p) => p.lcm_name().to_owned(),
                        MemberType::Struct(n) | MemberType::Enum(n) => n.full(),
                    };
                    lcm_type = format!("LCM Type: {tn}");
                    for d in &m.dims {
                        let _ = write!(lcm_type, "[{}]", d.hash_text());
                    }
                }
                w.blank();
                self.block_doc(&mut w, m.doc.as_deref().unwrap_or(""), is_array.then_some(lcm_type.as_str()));
            }
            if m.dims.is_empty() {
                w.line(format!("{:<10} {};", e.ctype(), m.name));
            } else if m.all_dims_fixed() {
                let dims: String = m.dims.iter().map(|d| format!("[{}]", d.hash_text())).collect();
                w.line(format!("{:<10} {}{};", e.ctype(), m.name, dims));
            } else {
                w.line(format!("{:<10} {}{};", e.ptr_base(), "*".repeat(m.dims.len()), m.name));
            }
        }
        if self.fixed_size(s).is_none() {
            w.blank();
            w.line(format!(
                "/** Nerve: the one allocation holding the strings and arrays of a message that {name}_decode() made, which"
            ));
            w.line(format!(
                " * {name}_decode_cleanup() frees; NULL otherwise. Not part of the message (never encoded): leave it alone. */"
            ));
            w.line(format!("{:<10} *{BLOCK_MEMBER};", "void"));
        }
        w.dedent();
        w.line("};");
        w.blank();
        let protos = format!(
            "/**
 * Create a deep copy of a {name}.
 * When no longer needed, destroy it with {name}_destroy(). Returns NULL if memory runs out.
 */
{name}* {name}_copy(const {name}* to_copy);

/**
 * Destroy an instance of {name} created by {name}_copy()
 */
void {name}_destroy({name}* to_destroy);

/**
 * Encode a message of type {name} into binary form.
 *
 * @param buf The output buffer.
 * @param offset Encoding starts at this byte offset into @p buf.
 * @param maxlen Maximum number of bytes to write.  This should generally
 *               be equal to {name}_encoded_size().
 * @param msg The message to encode.
 * @return The number of bytes encoded, or <0 (a NERVE_LCM_E* code) if an error occured.
 */
int {name}_encode(void *buf, int offset, int maxlen, const {name} *p);

/**
 * Decode a message of type {name} from binary form.
 * When decoding messages containing strings or variable-length arrays, this
 * function may allocate memory.  When finished with the decoded message,
 * release allocated resources with {name}_decode_cleanup().
 * On error nothing stays allocated and @p msg is zeroed.
 * Nerve puts all of a message's strings and arrays in one allocation (liblcm
 * makes one per part): do not free or replace them one by one, as liblcm
 * would allow; change a copy ({name}_copy()) instead. @p maxlen is best the
 * message's size: the allocation is sized from it.
 *
 * @param buf The buffer containing the encoded message
 * @param offset The byte offset into @p buf where the encoded message starts.
 * @param maxlen The maximum number of bytes to read while decoding.
 * @param msg Output parameter where the decoded message is stored
 * @return The number of bytes decoded, or <0 (a NERVE_LCM_E* code) if an error occured.
 */
int {name}_decode(const void *buf, int offset, int maxlen, {name} *msg);

/**
 * Decode a message of type {name} without calling malloc: its strings and
 * variable-length arrays are carved from @p arena (Nerve's allocation-free
 * decode, for real-time loops; not in lcm-gen). Reset the arena with
 * nerve_lcm_arena_reset() before each decode; the message lives until then.
 * Never call {name}_decode_cleanup() on it. Checks exactly what
 * {name}_decode() checks; fails with NERVE_LCM_ENOMEM if the arena is full.
 * On error @p msg is zeroed.
 *
 * @return The number of bytes decoded, or <0 (a NERVE_LCM_E* code) if an error occured.
 */
int {name}_decode_arena(const void *buf, int offset, int maxlen, {name} *msg, nerve_lcm_arena *arena);

/**
 * Release resources allocated by {name}_decode()
 * @return 0
 */
int {name}_decode_cleanup({name} *p);

/**
 * Check how many bytes are required to encode a message of type {name}
 */
int {name}_encoded_size(const {name} *p);

/**
 * The size of the C struct {name}, in bytes.
 */
size_t {name}_struct_size(void);

// LCM support functions. Users should not call these
int64_t __{name}_get_hash(void);
int __{name}_encode_array(
    void *buf, int offset, int maxlen, const {name} *p, int elements);
int __{name}_decode_array(
    const void *buf, int offset, int maxlen, {name} *p, int elements);
int __{name}_decode_array_a(
    const void *buf, int offset, int maxlen, {name} *p, int elements, nerve_lcm_arena *arena);
int __{name}_decode_array_cleanup({name} *p, int elements);
int __{name}_encoded_array_size(const {name} *p, int elements);
int __{name}_clone_array(const {name} *p, {name} *q, int elements);
"
        );
        w.lines(&protos);
        if self.opts.c_pubsub {
            w.blank();
            w.lines(pubsub_declarations(&name));
        }
        if let Some(size) = self.fixed_size(s) {
            w.blank();
            self.raw_functions(&mut w, s, size);
        }
        w.blank();
        w.line("#ifdef __cplusplus");
        w.line("}");
        w.line("#endif");
        if !by_ptr.is_empty() {
            w.blank();
            for d in &by_ptr {
                w.line(format!("#include \"{d}.h\""));
            }
        }
        w.blank();
        w.line("#endif");
        w.finish()
    }

    fn block_doc(&self, w: &mut CodeWriter, doc: &str, extra: Option<&str>) {
        w.line("/**");
        if !doc.is_empty() {
            for l in doc.lines() {
                w.line(format!(" * {}", comment_text(l)).trim_end());
            }
        }
        if let Some(x) = extra {
            w.line(format!(" * {}", comment_text(x)));
        }
        w.line(" */");
    }

    /// C names of the struct types `s` holds by value (needed complete) and only behind pointers.
    fn deps(&self, s: &Struct) -> (Vec<String>, Vec<String>) {
        let mut by_value = Vec::new();
        let mut by_ptr = Vec::new();
        for m in &s.members {
            if let MemberType::Struct(n) = &m.ty {
                if n == &s.name {
                    continue;
                }
                let c = self.cname(n);
                if m.all_dims_fixed() {
                    if !by_value.contains(&c) {
                        by_value.push(c);
                    }
                } else if !by_ptr.contains(&c) {
                    by_ptr.push(c);
                }
            }
        }
        by_ptr.retain(|c| !by_value.contains(c));
        (by_value, by_ptr)
    }

    /// `static inline` raw encode/decode for a fixed-size type: no checks, exactly `size` bytes.
    fn raw_functions(&self, w: &mut CodeWriter, s: &Struct, size: usize) {
        let name = self.cname(&s.name);
        w.line(format!("/** Writes the {size} bytes of one {name} body at b; the caller has checked the room. */"));
        w.block(format!("static inline void __{name}_encode_raw(uint8_t *b, const {name} *q)\n{{"), "}", |w| {
            w.line("(void) b;");
            w.line("(void) q;");
            let mut off = 0;
            for m in &s.members {
                off += self.raw_member(w, m, "b", off, true);
            }
        });
        w.blank();
        w.line(format!(
            "/** Reads the {size} bytes of one {name} body at b; the caller has checked they are there. */"
        ));
        w.block(format!("static inline void __{name}_decode_raw(const uint8_t *b, {name} *q)\n{{"), "}", |w| {
            w.line("(void) b;");
            w.line("(void) q;");
            let mut off = 0;
            for m in &s.members {
                off += self.raw_member(w, m, "b", off, false);
            }
        });
        self.shuffle_functions(w, s, size);
    }

    /// The members of `s` as (member, element size, element count) when every one is a number or a fixed array of
    /// numbers and `s` fits in 16 bytes encoded and in C (natural alignment): the types whose arrays go through
    /// `nerve_lcm_shuffle`.
    fn shuffle_members<'m>(&self, s: &'m Struct, size: usize) -> Option<Vec<(&'m Member, usize, usize)>> {
        // Booleans shuffle too (an int8_t holds any byte), but the struct must also fit in 16 bytes in C, where
        // alignment padding can make it larger than encoded.
        if size == 0 || self.c_layout(&MemberType::Struct(s.name.clone())).0 > 16 {
            return None;
        }
        let shuffle = StructPlan::new(&self.input.layout, s).shuffle?;
        Some(shuffle.fields.iter().map(|f| (&s.members[f.member], f.elem_size, f.count)).collect())
    }

    /// `__T_decode_shuffled` / `__T_encode_shuffled`: the leading elements of an array of `s` done by
    /// `nerve_lcm_shuffle` (SSSE3), returning how many; 0 when the type or the CPU does not allow it.
    fn shuffle_functions(&self, w: &mut CodeWriter, s: &Struct, size: usize) {
        let name = self.cname(&s.name);
        let members = self.shuffle_members(s, size);
        for encode in [false, true] {
            let (dir, sig) = if encode {
                (
                    "encode",
                    format!("static inline size_t __{name}_encode_shuffled(uint8_t *b, const {name} *p, size_t n)\n{{"),
                )
            } else {
                ("decode", format!("static inline size_t __{name}_decode_shuffled(const uint8_t *b, size_t avail, {name} *p, size_t n)\n{{"))
            };
            w.blank();
            w.line(format!(
                "/** The first elements of an array of n {name}s {dir}d with one SSSE3 shuffle each; returns how many (the caller \
                 does the rest). */"
            ));
            w.block(sig, "}", |w| {
                if let Some(members) = &members {
                    // The mask as literal bytes, from the layout the x86-64 ABIs give (natural alignment), and a
                    // condition that the compiler folds to true when the real layout (offsetof) is that one.
                    // (Designated initializers with offsetof would say it directly, but C++ rejects them.)
                    let mut mask = [0usize; 16];
                    let (mut enc, mut mem) = (0usize, 0usize);
                    let mut layout = vec![format!("sizeof({name}) <= 16")];
                    for (m, es, count) in members {
                        mem = mem.div_ceil(*es) * es;
                        layout.push(format!("offsetof({name}, {}) == {mem}", m.name));
                        for i in 0..es * count {
                            let (from_mem, from_enc) = (mem + i, enc + i - i % es + (es - 1 - i % es));
                            if encode {
                                mask[from_enc] = from_mem;
                            } else {
                                mask[from_mem] = from_enc;
                            }
                        }
                        enc += es * count;
                        mem += es * count;
                    }
                    let mask: Vec<String> = mask.iter().map(usize::to_string).collect();
                    w.line("#if NERVE_LCM_SSSE3");
                    w.line(format!("static const signed char mask[16] = {{ {} }};", mask.join(", ")));
                    w.line(format!("if ({} && nerve_lcm_has_ssse3())", layout.join(" && ")));
                    if encode {
                        w.line(format!(
                            "    return nerve_lcm_shuffle((const uint8_t *) p, sizeof *p, n * sizeof *p, b, {size}, n * {size}, n, mask);"
                        ));
                    } else {
                        w.line(format!(
                            "    return nerve_lcm_shuffle(b, {size}, avail, (uint8_t *) p, sizeof *p, n * sizeof *p, n, mask);"
                        ));
                    }
                    w.line("#endif");
                }
                w.line("(void) b;");
                if !encode {
                    w.line("(void) avail;");
                }
                w.line("(void) p;");
                w.line("(void) n;");
                w.line("return 0;");
            });
        }
    }

    /// Writes the unchecked encode (or decode) of a fixed-size member at `base + off`; returns its size.
    fn raw_member(&self, w: &mut CodeWriter, m: &Member, base: &str, off: usize, encode: bool) -> usize {
        let e = self.elem(&m.ty);
        let size = self.input.layout.member_fixed_size(m).expect("raw members have a fixed size");
        let at = if off == 0 { base.to_owned() } else { format!("{base} + {off}") };
        let count: usize = m.dims.iter().map(|d| if let Dim::Fixed { len, .. } = d { *len } else { 0 }).product();
        let dir = if encode { "put" } else { "get" };
        match (&e, m.dims.is_empty()) {
            (Elem::Prim { helper, .. }, true) => {
                w.line(format!("nerve_lcm_{dir}_{helper}({at}, &q->{});", m.name));
            }
            (Elem::Prim { size: es, .. }, false) => {
                w.line(format!("nerve_lcm_{dir}_{}({at}, q->{}, {count});", array_helper(*es), m.name));
            }
            (Elem::Fixed { cname, .. }, true) => {
                let f = if encode { "encode" } else { "decode" };
                w.line(format!("__{cname}_{f}_raw({at}, &q->{});", m.name));
            }
            (Elem::Fixed { cname, size: es }, false) => {
                let f = if encode { "encode" } else { "decode" };
                let cst = if encode { "const " } else { "" };
                let flat = format!("&q->{}{}", m.name, "[0]".repeat(m.dims.len()));
                w.block("{", "}", |w| {
                    w.line(format!("{cst}{cname} *a_ = {flat};"));
                    w.line("size_t i_;");
                    w.line(format!("for (i_ = 0; i_ < {count}; i_++)"));
                    w.line(format!("    __{cname}_{f}_raw({at} + i_ * {es}, &a_[i_]);"));
                });
            }
            _ => unreachable!("strings and variable structs have no fixed size"),
        }
        size
    }

    // ---------------------------------------------------------------------------------------------- source

    fn source(&self, s: &Struct) -> String {
        let name = self.cname(&s.name);
        let mut w = CodeWriter::new("    ");
        w.line("// THIS IS AN AUTOMATICALLY GENERATED FILE.  DO NOT MODIFY");
        w.line("// BY HAND!!");
        w.line("//");
        w.line(format!("// Generated by nerve gen (LCM-compatible C) from {}", s.span.file.display()));
        w.blank();
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

    fn fixed_count(m: &Member) -> usize {
        m.dims.iter().map(|d| if let Dim::Fixed { len, .. } = d { *len } else { 0 }).product()
    }

    // ---- encode

    fn encode_run(&self, w: &mut CodeWriter, run: &[&Member]) {
        let first = run[0];
        if let Some(total) = self.input.layout.member_fixed_size(first) {
            let total: usize =
                total + run[1..].iter().map(|m| self.input.layout.member_fixed_size(m).unwrap_or(0)).sum::<usize>();
            if total == 0 {
                return;
            }
            w.line(format!("if (rem - pos < {total})"));
            w.line("    return NERVE_LCM_ENOSPACE;");
            let mut off = 0;
            for m in run {
                off += self.raw_member_at(w, m, off, true);
            }
            w.line(format!("pos += {total};"));
            return;
        }
        let m = first;
        let e = self.elem(&m.ty);
        if m.all_dims_fixed() {
            let (ptr, n) = if m.dims.is_empty() {
                (format!("&q->{}", m.name), 1)
            } else {
                (format!("&q->{}{}", m.name, "[0]".repeat(m.dims.len())), Self::fixed_count(m))
            };
            self.encode_elems(w, &e, &ptr, &format!("(size_t) {n}"));
            return;
        }
        // A variable array: counts must not be negative (the decoder would reject the message).
        w.block("{", "}", |w| {
            for d in &m.dims {
                if let Dim::Variable { member } = d {
                    w.line(format!("if (q->{member} < 0)"));
                    w.line("    return NERVE_LCM_ELENGTH;");
                }
            }
            self.levels(w, m, &format!("q->{}", m.name), 0, &mut |w, ptr, n| self.encode_elems(w, &e, ptr, n), None);
        });
    }

    /// Encodes `n` elements starting at pointer expression `ptr`.
    fn encode_elems(&self, w: &mut CodeWriter, e: &Elem, ptr: &str, n: &str) {
        match e {
            Elem::Prim { size, .. } => {
                let bound = if *size == 1 { "rem - pos".to_owned() } else { format!("(rem - pos) / {size}") };
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n};"));
                    w.line(format!("if (n_ > {bound})"));
                    w.line("    return NERVE_LCM_ENOSPACE;");
                    w.line(format!("nerve_lcm_put_{}(b + pos, {ptr}, n_);", array_helper(*size)));
                    w.line(format!("pos += n_ * {size};"));
                });
            }
            Elem::Fixed { cname, size } => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.line(format!("const {cname} *a_ = {ptr};"));
                    if *size > 0 {
                        w.line(format!("if (n_ > (rem - pos) / {size})"));
                        w.line("    return NERVE_LCM_ENOSPACE;");
                        w.line(format!("for (i_ = __{cname}_encode_shuffled(b + pos, a_, n_); i_ < n_; i_++)"));
                        w.line(format!("    __{cname}_encode_raw(b + pos + i_ * {size}, &a_[i_]);"));
                        w.line(format!("pos += n_ * {size};"));
                    } else {
                        w.line("(void) a_;");
                        w.line("(void) n_;");
                        w.line("(void) i_;");
                    }
                });
            }
            Elem::Str => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.line(format!("char *const *a_ = {ptr};"));
                    w.block("for (i_ = 0; i_ < n_; i_++) {", "}", |w| {
                        w.line("r = nerve_lcm_put_string(b, rem, &pos, a_[i_]);");
                        w.line("if (r)");
                        w.line("    return r;");
                    });
                });
            }
            Elem::Var { cname } => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n};"));
                    w.line("if (n_ > 0x7fffffff)");
                    w.line("    return NERVE_LCM_ELENGTH;");
                    w.line(format!(
                        "r = __{cname}_encode_array(buf, offset + (int) pos, (int) (rem - pos), {ptr}, (int) n_);"
                    ));
                    w.line("if (r < 0)");
                    w.line("    return r;");
                    w.line("pos += (size_t) r;");
                });
            }
        }
    }

    /// Raw access at `b + pos + off` for a member of a fixed-size run.
    fn raw_member_at(&self, w: &mut CodeWriter, m: &Member, off: usize, encode: bool) -> usize {
        let base = "b + pos";
        self.raw_member(w, m, base, off, encode)
    }

    /// Walks the pointer levels of a member with a variable dimension. `inner` writes the work on the innermost
    /// level (pointer expression, element count); `alloc` (decode and clone) allocates each level first.
    #[allow(clippy::type_complexity)]
    fn levels(
        &self,
        w: &mut CodeWriter,
        m: &Member,
        lvalue: &str,
        level: usize,
        inner: &mut dyn FnMut(&mut CodeWriter, &str, &str),
        alloc: Option<&dyn Fn(&mut CodeWriter, &str, &str, usize)>,
    ) {
        let k = m.dims.len();
        let n = Self::dim_count(&m.dims[level], "q");
        if let Some(a) = alloc {
            a(w, lvalue, &n, level);
        }
        if level + 1 == k {
            inner(w, lvalue, &n);
            return;
        }
        let i = format!("i{level}");
        w.block("{", "}", |w| {
            w.line(format!("size_t {i}, n{level} = {n};"));
            w.block(format!("for ({i} = 0; {i} < n{level}; {i}++) {{"), "}", |w| {
                self.levels(w, m, &format!("{lvalue}[{i}]"), level + 1, inner, alloc);
            });
        });
    }

    // ---- decode

    fn decode_run(&self, w: &mut CodeWriter, run: &[&Member]) {
        let first = run[0];
        if let Some(total) = self.input.layout.member_fixed_size(first) {
            let total: usize =
                total + run[1..].iter().map(|m| self.input.layout.member_fixed_size(m).unwrap_or(0)).sum::<usize>();
            if total == 0 {
                return;
            }
            w.line(format!("if (rem - pos < {total}) {{"));
            w.line("    r = NERVE_LCM_ENOSPACE;");
            w.line("    goto fail;");
            w.line("}");
            let mut off = 0;
            for m in run {
                off += self.raw_member_at(w, m, off, false);
            }
            w.line(format!("pos += {total};"));
            return;
        }
        let m = first;
        let e = self.elem(&m.ty);
        if m.all_dims_fixed() {
            let (ptr, n) = if m.dims.is_empty() {
                (format!("&q->{}", m.name), 1)
            } else {
                (format!("&q->{}{}", m.name, "[0]".repeat(m.dims.len())), Self::fixed_count(m))
            };
            self.decode_elems(w, &e, &ptr, &format!("(size_t) {n}"));
            return;
        }
        let min = self.input.layout.elem_min_size(&m.ty);
        let k = m.dims.len();
        w.block("{", "}", |w| {
            // Check every count against the bytes that remain before allocating anything.
            if k == 1 {
                let Dim::Variable { member } = &m.dims[0] else { unreachable!("a variable member has a variable dim") };
                w.line(format!("r = nerve_lcm_check_count((int64_t) q->{member}, {min}, rem - pos);"));
            } else {
                let dims: Vec<String> = m
                    .dims
                    .iter()
                    .map(|d| match d {
                        Dim::Fixed { len, .. } => format!("{len}"),
                        Dim::Variable { member } => format!("(int64_t) q->{member}"),
                    })
                    .collect();
                w.line(format!("int64_t dims_[{k}] = {{ {} }};", dims.join(", ")));
                w.line(format!("r = nerve_lcm_check_dims(dims_, {k}, {min}, rem - pos);"));
            }
            w.line("if (r)");
            w.line("    goto fail;");
            let base = e.ptr_base();
            let owns = e.owns();
            let alloc = |w: &mut CodeWriter, lv: &str, n: &str, level: usize| {
                let stars = "*".repeat(k - level - 1);
                let is_ptr_level = level + 1 < k;
                let f = if is_ptr_level || owns && matches!(e, Elem::Str) {
                    "nerve_lcm_alloc_zeroed"
                } else {
                    "nerve_lcm_alloc"
                };
                let args = if f == "nerve_lcm_alloc_zeroed" {
                    format!("arena, {n}, sizeof({base}{stars})")
                } else {
                    format!("arena, sizeof({base}{stars}) * {n}, 8")
                };
                w.line(format!("{lv} = ({base}{stars}*) {f}({args});"));
                w.line(format!("if (!{lv} && {n} > 0) {{"));
                w.line("    r = NERVE_LCM_ENOMEM;");
                w.line("    goto fail;");
                w.line("}");
            };
            self.levels(
                w,
                m,
                &format!("q->{}", m.name),
                0,
                &mut |w, ptr, n| self.decode_elems(w, &e, ptr, n),
                Some(&alloc),
            );
        });
    }

    /// Decodes `n` elements into the storage at pointer expression `ptr`.
    fn decode_elems(&self, w: &mut CodeWriter, e: &Elem, ptr: &str, n: &str) {
        match e {
            Elem::Prim { size, .. } => {
                let bound = if *size == 1 { "rem - pos".to_owned() } else { format!("(rem - pos) / {size}") };
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n};"));
                    w.line(format!("if (n_ > {bound}) {{"));
                    w.line("    r = NERVE_LCM_ENOSPACE;");
                    w.line("    goto fail;");
                    w.line("}");
                    w.line(format!("nerve_lcm_get_{}(b + pos, {ptr}, n_);", array_helper(*size)));
                    w.line(format!("pos += n_ * {size};"));
                });
            }
            Elem::Fixed { cname, size } => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.line(format!("{cname} *a_ = {ptr};"));
                    if *size > 0 {
                        w.line(format!("if (n_ > (rem - pos) / {size}) {{"));
                        w.line("    r = NERVE_LCM_ENOSPACE;");
                        w.line("    goto fail;");
                        w.line("}");
                        w.line(format!(
                            "for (i_ = __{cname}_decode_shuffled(b + pos, rem - pos, a_, n_); i_ < n_; i_++)"
                        ));
                        w.line(format!("    __{cname}_decode_raw(b + pos + i_ * {size}, &a_[i_]);"));
                        w.line(format!("pos += n_ * {size};"));
                    } else {
                        w.line("(void) a_;");
                        w.line("(void) n_;");
                        w.line("(void) i_;");
                    }
                });
            }
            Elem::Str => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.line(format!("char **a_ = {ptr};"));
                    w.block("for (i_ = 0; i_ < n_; i_++) {", "}", |w| {
                        w.line("r = nerve_lcm_get_string_a(b, rem, &pos, &a_[i_], arena);");
                        w.line("if (r)");
                        w.line("    goto fail;");
                    });
                });
            }
            Elem::Var { cname } => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n};"));
                    w.line(format!(
                        "r = __{cname}_decode_array_a(buf, offset + (int) pos, (int) (rem - pos), {ptr}, (int) n_, arena);"
                    ));
                    w.line("if (r < 0)");
                    w.line("    goto fail;");
                    w.line("pos += (size_t) r;");
                    w.line("r = 0;");
                });
            }
        }
    }

    // ---- cleanup

    fn cleanup_member(&self, w: &mut CodeWriter, m: &Member) {
        let e = self.elem(&m.ty);
        let free_elems = |w: &mut CodeWriter, ptr: &str, n: &str| match &e {
            Elem::Str => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.line(format!("char **a_ = {ptr};"));
                    w.line("for (i_ = 0; i_ < n_; i_++) {");
                    w.line("    free(a_[i_]);");
                    w.line("    a_[i_] = NULL;");
                    w.line("}");
                });
            }
            Elem::Var { cname } => {
                w.line(format!("__{cname}_decode_array_cleanup({ptr}, (int) ({n}));"));
            }
            _ => {}
        };
        if m.all_dims_fixed() {
            if m.dims.is_empty() {
                match &e {
                    Elem::Str => {
                        w.line(format!("free(q->{});", m.name));
                        w.line(format!("q->{} = NULL;", m.name));
                    }
                    _ => free_elems(w, &format!("&q->{}", m.name), "(size_t) 1"),
                }
            } else {
                let ptr = format!("&q->{}{}", m.name, "[0]".repeat(m.dims.len()));
                free_elems(w, &ptr, &format!("(size_t) {}", Self::fixed_count(m)));
            }
            return;
        }
        self.cleanup_level(w, m, &e, &format!("q->{}", m.name), 0);
    }

    fn cleanup_level(&self, w: &mut CodeWriter, m: &Member, e: &Elem, lv: &str, level: usize) {
        let k = m.dims.len();
        let n = Self::dim_count(&m.dims[level], "q");
        w.block(format!("if ({lv}) {{"), "}", |w| {
            if level + 1 == k {
                match e {
                    Elem::Str => {
                        w.line(format!("size_t n_ = {n}, i_;"));
                        w.line("for (i_ = 0; i_ < n_; i_++)");
                        w.line(format!("    free({lv}[i_]);"));
                    }
                    Elem::Var { cname } => {
                        w.line(format!("__{cname}_decode_array_cleanup({lv}, (int) ({n}));"));
                    }
                    _ => {}
                }
            } else {
                let i = format!("i{level}");
                w.line(format!("size_t {i}, n{level} = {n};"));
                w.block(format!("for ({i} = 0; {i} < n{level}; {i}++) {{"), "}", |w| {
                    self.cleanup_level(w, m, e, &format!("{lv}[{i}]"), level + 1);
                });
            }
            w.line(format!("free({lv});"));
            w.line(format!("{lv} = NULL;"));
        });
    }

    // ---- encoded size

    fn size_run(&self, w: &mut CodeWriter, run: &[&Member]) {
        let first = run[0];
        if let Some(total) = self.input.layout.member_fixed_size(first) {
            let total: usize =
                total + run[1..].iter().map(|m| self.input.layout.member_fixed_size(m).unwrap_or(0)).sum::<usize>();
            if total > 0 {
                w.line(format!("size += {total};"));
            }
            return;
        }
        let m = first;
        let e = self.elem(&m.ty);
        let size_elems = |w: &mut CodeWriter, ptr: &str, n: &str| match &e {
            Elem::Prim { size, .. } | Elem::Fixed { size, .. } => {
                if *size > 0 {
                    w.line(format!("size += {size} * {n};"));
                }
            }
            Elem::Str => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.line(format!("char *const *a_ = {ptr};"));
                    w.line("for (i_ = 0; i_ < n_; i_++)");
                    w.line("    size += nerve_lcm_string_size(a_[i_]);");
                });
            }
            Elem::Var { cname } => {
                w.line(format!("size += (size_t) __{cname}_encoded_array_size({ptr}, (int) ({n}));"));
            }
        };
        if m.all_dims_fixed() {
            let (ptr, n) = if m.dims.is_empty() {
                (format!("&q->{}", m.name), 1)
            } else {
                (format!("&q->{}{}", m.name, "[0]".repeat(m.dims.len())), Self::fixed_count(m))
            };
            size_elems(w, &ptr, &format!("(size_t) {n}"));
            return;
        }
        let mut inner = |w: &mut CodeWriter, ptr: &str, n: &str| size_elems(w, ptr, n);
        if matches!(e, Elem::Prim { .. } | Elem::Fixed { .. }) {
            // No need to walk the pointers: the size is the product of the dimensions.
            let n: Vec<String> = m.dims.iter().map(|d| Self::dim_count(d, "q")).collect();
            inner(w, "NULL", &n.join(" * "));
            return;
        }
        w.block(format!("if (q->{}) {{", m.name), "}", |w| {
            self.levels(w, m, &format!("q->{}", m.name), 0, &mut inner, None);
        });
    }

    // ---- clone

    fn clone_member(&self, w: &mut CodeWriter, m: &Member) {
        let e = self.elem(&m.ty);
        let copy_elems = |w: &mut CodeWriter, src: &str, dst: &str, n: &str| match &e {
            Elem::Prim { .. } | Elem::Fixed { .. } => {
                w.line(format!("if ({n} > 0)"));
                w.line(format!("    memcpy({dst}, {src}, sizeof(*{dst}) * {n});"));
            }
            Elem::Str => {
                w.block("{", "}", |w| {
                    w.line(format!("size_t n_ = {n}, i_;"));
                    w.block("for (i_ = 0; i_ < n_; i_++) {", "}", |w| {
                        w.line(format!("r = nerve_lcm_clone_string(({src})[i_], &({dst})[i_]);"));
                        w.line("if (r)");
                        w.line("    goto fail;");
                    });
                });
            }
            Elem::Var { cname } => {
                w.line(format!("r = __{cname}_clone_array({src}, {dst}, (int) ({n}));"));
                w.line("if (r < 0)");
                w.line("    goto fail;");
            }
        };
        if m.all_dims_fixed() {
            let flat = "[0]".repeat(m.dims.len());
            let n = if m.dims.is_empty() { 1 } else { Self::fixed_count(m) };
            copy_elems(w, &format!("&s->{}{flat}", m.name), &format!("&d->{}{flat}", m.name), &format!("(size_t) {n}"));
            return;
        }
        self.clone_level(w, m, &e, &format!("s->{}", m.name), &format!("d->{}", m.name), 0, &copy_elems);
    }

    #[allow(clippy::too_many_arguments)]
    fn clone_level(
        &self,
        w: &mut CodeWriter,
        m: &Member,
        e: &Elem,
        src: &str,
        dst: &str,
        level: usize,
        copy_elems: &dyn Fn(&mut CodeWriter, &str, &str, &str),
    ) {
        let k = m.dims.len();
        let n = Self::dim_count(&m.dims[level], "s");
        let base = e.ptr_base();
        let stars = "*".repeat(k - level - 1);
        let zeroed = level + 1 < k || matches!(e, Elem::Str);
        w.block(format!("if ({src}) {{"), "}", |w| {
            w.line(format!("size_t n{level} = {n};"));
            if zeroed {
                w.line(format!("{dst} = ({base}{stars}*) nerve_lcm_calloc(n{level}, sizeof({base}{stars}));"));
            } else {
                w.line(format!("{dst} = ({base}{stars}*) nerve_lcm_malloc(sizeof({base}{stars}) * n{level});"));
            }
            w.line(format!("if (!{dst} && n{level} > 0) {{"));
            w.line("    r = NERVE_LCM_ENOMEM;");
            w.line("    goto fail;");
            w.line("}");
            if level + 1 == k {
                copy_elems(w, src, dst, &format!("n{level}"));
            } else {
                let i = format!("i{level}");
                w.line(format!("size_t {i};"));
                w.block(format!("for ({i} = 0; {i} < n{level}; {i}++) {{"), "}", |w| {
                    self.clone_level(w, m, e, &format!("{src}[{i}]"), &format!("{dst}[{i}]"), level + 1, copy_elems);
                });
            }
        });
    }
}
