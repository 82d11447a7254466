//! The checked type model: what a set of `.lcm` files means once parsed and checked.
//!
//! Every generator, the fingerprint and the dynamic codec work from these types only; none of them look at tokens.
//! Names keep LCM's spelling: a type's full name is `package.name`, with no package for package-less types.

use std::fmt;
use std::path::PathBuf;

/// A position in a `.lcm` file, 1-based, columns counted in characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// The file as it was named on the command line.
    pub file: PathBuf,
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub col: u32,
}

/// A possibly package-qualified type name, e.g. `lcmtest.node_t`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeName {
    /// Dotted package, empty when the type has none.
    pub package: String,
    /// The short name, e.g. `node_t`.
    pub name: String,
}

impl TypeName {
    /// Splits `a.b.name` into package `a.b` and name `name`.
    pub fn parse(full: &str) -> TypeName {
        match full.rsplit_once('.') {
            Some((package, name)) => TypeName { package: package.to_owned(), name: name.to_owned() },
            None => TypeName { package: String::new(), name: full.to_owned() },
        }
    }

    /// `package.name`, or `name` without a package.
    pub fn full(&self) -> String {
        if self.package.is_empty() {
            self.name.clone()
        } else {
            format!("{}.{}", self.package, self.name)
        }
    }

    /// The package split at its dots; empty without a package.
    pub fn package_path(&self) -> Vec<&str> {
        if self.package.is_empty() {
            Vec::new()
        } else {
            self.package.split('.').collect()
        }
    }
}

impl fmt::Display for TypeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.package.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}.{}", self.package, self.name)
        }
    }
}

/// LCM's primitive types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Primitive {
    /// `int8_t`
    Int8,
    /// `int16_t`
    Int16,
    /// `int32_t`
    Int32,
    /// `int64_t`
    Int64,
    /// `float` (IEEE binary32)
    Float,
    /// `double` (IEEE binary64)
    Double,
    /// `string`: UTF-8, length-prefixed and NUL-terminated on the wire
    String,
    /// `boolean`: one byte
    Boolean,
    /// `byte`: one unsigned byte
    Byte,
}

impl Primitive {
    /// All primitives, in the order LCM documents them.
    pub const ALL: [Primitive; 9] = [
        Primitive::Int8,
        Primitive::Int16,
        Primitive::Int32,
        Primitive::Int64,
        Primitive::Float,
        Primitive::Double,
        Primitive::String,
        Primitive::Boolean,
        Primitive::Byte,
    ];

    /// The name as written in `.lcm` files (and hashed into fingerprints).
    pub fn lcm_name(self) -> &'static str {
        match self {
            Primitive::Int8 => "int8_t",
            Primitive::Int16 => "int16_t",
            Primitive::Int32 => "int32_t",
            Primitive::Int64 => "int64_t",
            Primitive::Float => "float",
            Primitive::Double => "double",
            Primitive::String => "string",
            Primitive::Boolean => "boolean",
            Primitive::Byte => "byte",
        }
    }

    /// The primitive named `name` in a `.lcm` file, if any.
    pub fn from_lcm_name(name: &str) -> Option<Primitive> {
        Primitive::ALL.into_iter().find(|p| p.lcm_name() == name)
    }

    /// Bytes one value takes on the wire; `None` for `string`, whose size varies.
    pub fn wire_size(self) -> Option<usize> {
        match self {
            Primitive::Int8 | Primitive::Boolean | Primitive::Byte => Some(1),
            Primitive::Int16 => Some(2),
            Primitive::Int32 | Primitive::Float => Some(4),
            Primitive::Int64 | Primitive::Double => Some(8),
            Primitive::String => None,
        }
    }

    /// Whether a member of this type may size an array (`int8_t` to `int64_t`).
    pub fn can_size_array(self) -> bool {
        matches!(self, Primitive::Int8 | Primitive::Int16 | Primitive::Int32 | Primitive::Int64)
    }

    /// Whether a `const` may have this type.
    pub fn can_be_const(self) -> bool {
        matches!(
            self,
            Primitive::Int8
                | Primitive::Int16
                | Primitive::Int32
                | Primitive::Int64
                | Primitive::Float
                | Primitive::Double
        )
    }
}

/// The element type of a member.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MemberType {
    /// A primitive.
    Primitive(Primitive),
    /// Another struct, resolved to its full name.
    Struct(TypeName),
    /// A (deprecated) enum, resolved to its full name.
    Enum(TypeName),
}

impl MemberType {
    /// The primitive, if this is one.
    pub fn primitive(&self) -> Option<Primitive> {
        match self {
            MemberType::Primitive(p) => Some(*p),
            _ => None,
        }
    }
}

/// One array dimension of a member.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dim {
    /// A size fixed by the declaration: a literal (`[3]`, `[0x10]`) or an integer const (`[N]`).
    Fixed {
        /// The number of elements.
        len: usize,
        /// The text hashed into the fingerprint: the literal as written, or the const's value as written.
        hash_text: String,
        /// The const the size was named by, if any.
        const_name: Option<String>,
    },
    /// A size given by an earlier integer member of the same struct.
    Variable {
        /// The earlier member's name.
        member: String,
    },
}

impl Dim {
    /// Whether the size is fixed by the declaration.
    pub fn is_fixed(&self) -> bool {
        matches!(self, Dim::Fixed { .. })
    }

    /// The text hashed into the fingerprint for this dimension.
    pub fn hash_text(&self) -> &str {
        match self {
            Dim::Fixed { hash_text, .. } => hash_text,
            Dim::Variable { member } => member,
        }
    }
}

/// A member (field) of a struct.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The member's name.
    pub name: String,
    /// The element type.
    pub ty: MemberType,
    /// Array dimensions, outermost first; empty for a scalar.
    pub dims: Vec<Dim>,
    /// The doc comment attached to it.
    pub doc: Option<String>,
    /// Where the member's name is.
    pub span: Span,
}

impl Member {
    /// Whether every dimension is fixed (or there are none).
    pub fn all_dims_fixed(&self) -> bool {
        self.dims.iter().all(Dim::is_fixed)
    }
}

/// A constant's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConstValue {
    /// The value of an integer const.
    Int(i64),
    /// The value of a float or double const.
    Float(f64),
}

/// A `const` declared inside a struct. Consts are not encoded and not hashed.
#[derive(Debug, Clone, PartialEq)]
pub struct Const {
    /// The const's name.
    pub name: String,
    /// Its type: an integer type, `float` or `double`.
    pub ty: Primitive,
    /// Its value.
    pub value: ConstValue,
    /// The literal exactly as written; lcm-gen copies it into generated code.
    pub text: String,
    /// The doc comment attached to it.
    pub doc: Option<String>,
    /// Where the const's name is.
    pub span: Span,
}

/// A struct type.
#[derive(Debug, Clone, PartialEq)]
pub struct Struct {
    /// Its full name.
    pub name: TypeName,
    /// Members in declaration order (the wire order).
    pub members: Vec<Member>,
    /// Consts in declaration order.
    pub consts: Vec<Const>,
    /// The doc comment attached to it.
    pub doc: Option<String>,
    /// Where the struct's name is.
    pub span: Span,
    /// The base hash K(T) (spec 2.1): from this declaration alone.
    pub base_hash: u64,
    /// The fingerprint F(T) (spec 2.2): written in front of every encoded message.
    pub fingerprint: u64,
}

impl Struct {
    /// The member called `name`.
    pub fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }
}

/// One value of an enum.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumValue {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: i32,
}

/// A deprecated LCM enum: still parsed, hashed and decoded as lcm-gen 1.5.3 does.
#[derive(Debug, Clone, PartialEq)]
pub struct Enum {
    /// Its full name.
    pub name: TypeName,
    /// Its values in declaration order.
    pub values: Vec<EnumValue>,
    /// The doc comment attached to it.
    pub doc: Option<String>,
    /// Where the enum's name is.
    pub span: Span,
    /// Its hash (spec 1.6), which is also what it contributes to a struct containing it.
    pub hash: u64,
}

/// Every type found in a set of `.lcm` files, checked, with fingerprints computed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    /// Structs in the order they were declared.
    pub structs: Vec<Struct>,
    /// Enums in the order they were declared.
    pub enums: Vec<Enum>,
}

impl Schema {
    /// The struct with this full name.
    pub fn struct_named(&self, name: &TypeName) -> Option<&Struct> {
        self.structs.iter().find(|s| &s.name == name)
    }

    /// The enum with this full name.
    pub fn enum_named(&self, name: &TypeName) -> Option<&Enum> {
        self.enums.iter().find(|e| &e.name == name)
    }

    /// Structs sorted by full name, the order `--print-fingerprints` uses.
    pub fn structs_by_name(&self) -> Vec<&Struct> {
        let mut v: Vec<&Struct> = self.structs.iter().collect();
        v.sort_by_key(|s| s.name.full());
        v
    }
}
