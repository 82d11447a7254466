//! The header of a type: its struct, constants and function declarations, and the inline functions that
//! arrays of it use (raw fixed-size access, the SSSE3 shuffle).

use super::*;

impl Gen<'_> {
    pub(super) fn header(&self, s: &Struct) -> String {
        let name = self.cname(&s.name);
        let mut w = CodeWriter::new("    ");
        banner(&mut w, s);
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

    pub(super) fn block_doc(&self, w: &mut CodeWriter, doc: &str, extra: Option<&str>) {
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
    pub(super) fn deps(&self, s: &Struct) -> (Vec<String>, Vec<String>) {
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
    pub(super) fn raw_functions(&self, w: &mut CodeWriter, s: &Struct, size: usize) {
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
    pub(super) fn shuffle_members<'m>(&self, s: &'m Struct, size: usize) -> Option<Vec<(&'m Member, usize, usize)>> {
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
    pub(super) fn shuffle_functions(&self, w: &mut CodeWriter, s: &Struct, size: usize) {
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
    pub(super) fn raw_member(&self, w: &mut CodeWriter, m: &Member, base: &str, off: usize, encode: bool) -> usize {
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
}
