//! Mappings from LCM types to Foxglove's well-known schemas: which LCM type, and which of its fields, make a
//! `foxglove.RawImage` (or `CompressedImage`), `LaserScan`, `PointCloud`, `PoseInFrame`, `FrameTransform` or
//! `LocationFix`, and
//! the conversion of one decoded message ([`nerve_types::dynamic::Value`], from the dynamic decoder the raw view
//! uses) into the SDK's own schema type, encoded as the SDK encodes it (protobuf).
//!
//! A [`Mappings`] is the built-in set ([`Mappings::builtin`]: libbot's `bot_core` types and Nerve's examples),
//! optionally overridden by a file the user writes ([`Mappings::from_toml`], see [`file`](mod@file)). Before the
//! server uses them they are checked against the types it was given ([`Mappings::resolve`]): a file's mapping
//! whose type or fields do not exist is an error, a built-in one whose type is absent is left out.
//!
//! Converting never trusts the message: a width times height that does not match the data, a range count that
//! does not match the intensities, an unknown pixel format, a non-finite angle, a timestamp out of range are each a
//! [`Refusal`], counted by the server, and the message is then sent only in the raw view, never broken.

mod builtin;
pub mod file;
mod pixels;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use foxglove::schemas::packed_element_field::NumericType;
use foxglove::schemas::{
    CompressedImage, FrameTransform, LaserScan, LocationFix, PackedElementField, PointCloud, Pose, PoseInFrame,
    Quaternion, RawImage, Timestamp, Vector3,
};
use foxglove::{Encode, Schema};
use nerve_types::dynamic::{StructValue, Value};
use nerve_types::{Dim, MemberType, Primitive, Registry, Struct, TypeName};

pub use file::MappingFileError;

/// The Foxglove schema a mapping makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// `foxglove.RawImage`; a message whose pixel format is a compressed one (MJPEG) is a `CompressedImage`.
    Image,
    /// `foxglove.CompressedImage` (jpeg, png, webp, avif bytes).
    CompressedImage,
    /// `foxglove.LaserScan`.
    LaserScan,
    /// `foxglove.PointCloud` (from arrays of x, y and optionally z and intensity).
    PointCloud,
    /// `foxglove.PoseInFrame`.
    PoseInFrame,
    /// `foxglove.FrameTransform`.
    FrameTransform,
    /// `foxglove.LocationFix`.
    LocationFix,
}

impl Target {
    /// Every target, with the name a mapping file gives it.
    pub const ALL: [(Target, &'static str); 7] = [
        (Target::Image, "foxglove.RawImage"),
        (Target::CompressedImage, "foxglove.CompressedImage"),
        (Target::LaserScan, "foxglove.LaserScan"),
        (Target::PointCloud, "foxglove.PointCloud"),
        (Target::PoseInFrame, "foxglove.PoseInFrame"),
        (Target::FrameTransform, "foxglove.FrameTransform"),
        (Target::LocationFix, "foxglove.LocationFix"),
    ];

    /// The schema's name as a mapping file writes it.
    pub fn name(self) -> &'static str {
        Target::ALL.iter().find(|(t, _)| *t == self).map(|(_, n)| *n).unwrap_or("?")
    }

    /// The roles of fields this target reads: (role, required, what kind of member it must be).
    fn roles(self) -> &'static [(&'static str, bool, Kind)] {
        match self {
            Target::Image => &[
                ("width", true, Kind::Integer),
                ("height", true, Kind::Integer),
                ("data", true, Kind::Bytes),
                ("row_stride", false, Kind::Integer),
                ("pixelformat", false, Kind::Integer),
            ],
            Target::CompressedImage => &[("data", true, Kind::Bytes), ("pixelformat", false, Kind::Integer)],
            Target::LaserScan => &[
                ("ranges", true, Kind::Numbers(None)),
                ("intensities", false, Kind::Numbers(None)),
                ("start_angle", true, Kind::Number),
                ("angle_step", false, Kind::Number),
                ("end_angle", false, Kind::Number),
            ],
            Target::PointCloud => &[
                ("x", true, Kind::Numbers(None)),
                ("y", true, Kind::Numbers(None)),
                ("z", false, Kind::Numbers(None)),
                ("intensity", false, Kind::Numbers(None)),
            ],
            Target::PoseInFrame | Target::FrameTransform => {
                &[("position", true, Kind::Numbers(Some(3))), ("orientation", true, Kind::Numbers(Some(4)))]
            }
            Target::LocationFix => &[
                ("latitude", true, Kind::Number),
                ("longitude", true, Kind::Number),
                ("altitude", false, Kind::Number),
            ],
        }
    }
}

/// What kind of member a role needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A scalar integer.
    Integer,
    /// A scalar number (integer or floating point).
    Number,
    /// A one-dimensional array of numbers (of this fixed length at least, if given).
    Numbers(Option<usize>),
    /// A one-dimensional byte array.
    Bytes,
    /// A scalar string.
    Text,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Integer => f.write_str("an integer"),
            Kind::Number => f.write_str("a number"),
            Kind::Numbers(None) => f.write_str("an array of numbers"),
            Kind::Numbers(Some(n)) => write!(f, "an array of at least {n} numbers"),
            Kind::Bytes => f.write_str("a byte array"),
            Kind::Text => f.write_str("a string"),
        }
    }
}

/// Where a frame id comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// This text, with `{channel}` replaced by the channel's name.
    Fixed(String),
    /// This string member of the message.
    Field(String),
}

/// Where a message's timestamp comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Time {
    /// This integer member, counting units of `nanos_per_unit` nanoseconds since the epoch (`utime`: 1000).
    Field {
        /// The member's path.
        path: String,
        /// Nanoseconds per unit.
        nanos_per_unit: u64,
    },
    /// The time the message was received.
    Receive,
}

/// Order of a quaternion's four numbers in the LCM message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuaternionOrder {
    /// `(w, x, y, z)`, libbot's.
    Wxyz,
    /// `(x, y, z, w)`, ROS's and Foxglove's.
    Xyzw,
}

/// One mapping: an LCM type to a Foxglove schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// The LCM type's full name (`bot_core.image_t`).
    pub type_name: String,
    /// The schema made.
    pub target: Target,
    /// Member paths (dotted for nested structs) by role (`width`, `ranges`, `position`, ...).
    pub fields: BTreeMap<String, String>,
    /// The frame id (the parent frame for a transform).
    pub frame: Frame,
    /// The child frame id (transforms only).
    pub child_frame: Frame,
    /// The timestamp.
    pub time: Time,
    /// The encoding of a RawImage when no `pixelformat` member gives it (`rgb8`, `mono8`, ...), or the format of a
    /// CompressedImage (`jpeg`, `png`, ...).
    pub encoding: Option<String>,
    /// The quaternion's order in the message.
    pub quaternion: QuaternionOrder,
}

/// Why one message was not converted (it is sent raw only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn refuse<T>(why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal(why.into()))
}

/// The schema one converted message is in (an image mapping gives either of two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Out {
    /// `foxglove.RawImage`.
    RawImage,
    /// `foxglove.CompressedImage`.
    CompressedImage,
    /// `foxglove.LaserScan`.
    LaserScan,
    /// `foxglove.PointCloud`.
    PointCloud,
    /// `foxglove.PoseInFrame`.
    PoseInFrame,
    /// `foxglove.FrameTransform`.
    FrameTransform,
    /// `foxglove.LocationFix`.
    LocationFix,
}

impl Out {
    /// The SDK's schema for it (its name, `protobuf` encoding, the FileDescriptorSet).
    pub fn schema(self) -> Schema {
        let schema = match self {
            Out::RawImage => RawImage::get_schema(),
            Out::CompressedImage => CompressedImage::get_schema(),
            Out::LaserScan => LaserScan::get_schema(),
            Out::PointCloud => PointCloud::get_schema(),
            Out::PoseInFrame => PoseInFrame::get_schema(),
            Out::FrameTransform => FrameTransform::get_schema(),
            Out::LocationFix => LocationFix::get_schema(),
        };
        schema.expect("the SDK's well-known schemas all have a schema")
    }

    /// The schema's name, `foxglove.RawImage` and so on: also the suffix of the mapped channel's topic.
    pub fn schema_name(self) -> &'static str {
        match self {
            Out::RawImage => "foxglove.RawImage",
            Out::CompressedImage => "foxglove.CompressedImage",
            Out::LaserScan => "foxglove.LaserScan",
            Out::PointCloud => "foxglove.PointCloud",
            Out::PoseInFrame => "foxglove.PoseInFrame",
            Out::FrameTransform => "foxglove.FrameTransform",
            Out::LocationFix => "foxglove.LocationFix",
        }
    }

    /// The topic a mapped channel is advertised on: `<channel>/<schema name>`.
    pub fn topic(self, channel: &str) -> String {
        format!("{channel}/{}", self.schema_name())
    }

    /// The message encoding (the SDK's, for its schema types).
    pub fn message_encoding() -> String {
        RawImage::get_message_encoding()
    }
}

/// A set of mappings, at most one per LCM type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mappings {
    by_type: BTreeMap<String, Mapping>,
    // Which of them came from a user's file (checked strictly by `resolve`).
    from_file: Vec<String>,
}

impl Mappings {
    /// No mappings at all.
    pub fn none() -> Mappings {
        Mappings::default()
    }

    /// The built-in mappings: libbot's `bot_core` image, planar lidar, pose and rigid transform, and Nerve's
    /// example image, laser and pose types.
    pub fn builtin() -> Mappings {
        let mut m = Mappings::default();
        for mapping in builtin::all() {
            m.by_type.insert(mapping.type_name.clone(), mapping);
        }
        m
    }

    /// The built-in mappings overridden (type by type) by the mapping file `text` (see [`file`](mod@file));
    /// `builtin = false` in the file leaves the built-in ones out.
    pub fn from_toml(text: &str) -> Result<Mappings, MappingFileError> {
        let parsed = file::parse(text)?;
        let mut m = if parsed.builtin { Mappings::builtin() } else { Mappings::default() };
        for mapping in parsed.mappings {
            m.from_file.push(mapping.type_name.clone());
            m.by_type.insert(mapping.type_name.clone(), mapping);
        }
        Ok(m)
    }

    /// The mapping for the LCM type called `full_name`.
    pub fn get(&self, full_name: &str) -> Option<&Mapping> {
        self.by_type.get(full_name)
    }

    /// Every mapping, by type name.
    pub fn iter(&self) -> impl Iterator<Item = &Mapping> {
        self.by_type.values()
    }

    /// Checks the mappings against `registry`: those from a file must name a type it has, with members of the
    /// kinds their roles need (every problem is listed); built-in ones whose type it lacks are left out (a
    /// built-in one whose type has the name but not the members is left out too).
    pub fn resolve(mut self, registry: Option<&Registry>) -> Result<Mappings, Vec<String>> {
        let mut problems = Vec::new();
        let mut keep = BTreeMap::new();
        for (name, mapping) in std::mem::take(&mut self.by_type) {
            let strict = self.from_file.contains(&name);
            let st = registry.and_then(|r| r.by_name(&TypeName::parse(&name)));
            let Some(st) = st else {
                if strict {
                    problems.push(format!("mapping for {name}: no such LCM type among the types given (--types)"));
                }
                continue;
            };
            let found = check_fields(&mapping, st, registry.expect("a type was found"));
            if found.is_empty() {
                keep.insert(name, mapping);
            } else if strict {
                problems.extend(found.into_iter().map(|p| format!("mapping for {name}: {p}")));
            }
        }
        self.by_type = keep;
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

/// The problems with `mapping`'s member paths on `st`.
fn check_fields(mapping: &Mapping, st: &Struct, registry: &Registry) -> Vec<String> {
    let mut problems = Vec::new();
    for (role, required, kind) in mapping.target.roles() {
        match mapping.fields.get(*role) {
            Some(path) => {
                if let Err(why) = check_path(st, registry, path, *kind) {
                    problems.push(format!("{role} = {path:?}: {why}"));
                }
            }
            None if *required => problems.push(format!("{} needs a member for {role:?}", mapping.target.name())),
            None => {}
        }
    }
    for (what, frame) in [("frame_id", &mapping.frame), ("child_frame_id", &mapping.child_frame)] {
        if let Frame::Field(path) = frame {
            if let Err(why) = check_path(st, registry, path, Kind::Text) {
                problems.push(format!("{what}_field = {path:?}: {why}"));
            }
        }
    }
    if let Time::Field { path, .. } = &mapping.time {
        if let Err(why) = check_path(st, registry, path, Kind::Number) {
            problems.push(format!("timestamp = {path:?}: {why}"));
        }
    }
    if mapping.target == Target::Image
        && !mapping.fields.contains_key("pixelformat")
        && mapping.encoding.as_deref().and_then(pixels::by_encoding).is_none()
    {
        let e = mapping.encoding.as_deref().unwrap_or("(none)");
        problems.push(format!(
            "encoding {e:?}: a RawImage needs a pixelformat member or one of the encodings {}",
            pixels::ENCODINGS.join(", ")
        ));
    }
    problems
}

/// Whether the member at dotted `path` in `st` is of `kind`.
fn check_path(st: &Struct, registry: &Registry, path: &str, kind: Kind) -> Result<(), String> {
    let mut st = st;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let member = st.member(part).ok_or_else(|| format!("{} has no member {part:?}", st.name.full()))?;
        if parts.peek().is_some() {
            match (&member.ty, member.dims.is_empty()) {
                (MemberType::Struct(name), true) => {
                    st = registry.by_name(name).ok_or_else(|| format!("type {} is not known", name.full()))?;
                }
                _ => return Err(format!("{part:?} is not a (scalar) struct")),
            }
            continue;
        }
        let prim = member.ty.primitive();
        let numeric = matches!(
            prim,
            Some(Primitive::Int8 | Primitive::Int16 | Primitive::Int32 | Primitive::Int64 | Primitive::Float)
                | Some(Primitive::Double | Primitive::Byte)
        );
        let integer = numeric && !matches!(prim, Some(Primitive::Float | Primitive::Double));
        let ok = match kind {
            Kind::Integer => member.dims.is_empty() && integer,
            Kind::Number => member.dims.is_empty() && numeric,
            Kind::Text => member.dims.is_empty() && prim == Some(Primitive::String),
            Kind::Bytes => member.dims.len() == 1 && prim == Some(Primitive::Byte),
            Kind::Numbers(least) => {
                member.dims.len() == 1
                    && numeric
                    && match (least, &member.dims[0]) {
                        (Some(n), Dim::Fixed { len, .. }) => len >= &n,
                        (Some(_), _) => false,
                        (None, _) => true,
                    }
            }
        };
        if !ok {
            return Err(format!("{} {part} is not {kind}", member_type_text(member)));
        }
    }
    Ok(())
}

fn member_type_text(member: &nerve_types::Member) -> String {
    let ty = match &member.ty {
        MemberType::Primitive(p) => format!("{p:?}").to_lowercase(),
        MemberType::Struct(n) | MemberType::Enum(n) => n.full(),
    };
    format!("{ty}{}", "[]".repeat(member.dims.len()))
}

/// One converted message: its schema and its bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The schema it is in.
    pub out: Out,
    /// Its protobuf encoding.
    pub bytes: Vec<u8>,
}

impl Mapping {
    /// The schema the first message will most likely be in, before any is decoded (an image mapping's RawImage).
    pub fn default_out(&self) -> Out {
        match self.target {
            Target::Image => Out::RawImage,
            Target::CompressedImage => Out::CompressedImage,
            Target::LaserScan => Out::LaserScan,
            Target::PointCloud => Out::PointCloud,
            Target::PoseInFrame => Out::PoseInFrame,
            Target::FrameTransform => Out::FrameTransform,
            Target::LocationFix => Out::LocationFix,
        }
    }

    /// Converts one decoded message of the mapped type, received on `channel` at `recv_utime` (microseconds since
    /// the epoch), into its Foxglove schema, or says why not.
    pub fn convert(&self, value: &Value, channel: &str, recv_utime: i64) -> Result<Converted, Refusal> {
        let Some(msg) = value.as_struct() else { return refuse("the message is not a struct") };
        let timestamp = self.timestamp(msg, recv_utime)?;
        let frame_id = self.frame_text(&self.frame, msg, channel)?;
        let mut bytes = Vec::new();
        let out = match self.target {
            Target::Image | Target::CompressedImage => self.image(msg, timestamp, frame_id, &mut bytes)?,
            Target::LaserScan => {
                let ranges = self.numbers(msg, "ranges")?;
                let intensities = match self.fields.get("intensities") {
                    Some(_) => self.numbers(msg, "intensities")?,
                    None => Vec::new(),
                };
                // libbot senders leave the intensities out (nintensities = 0); otherwise one per range.
                if !intensities.is_empty() && intensities.len() != ranges.len() {
                    return refuse(format!("{} intensities for {} ranges", intensities.len(), ranges.len()));
                }
                let start_angle = self.finite(msg, "start_angle")?;
                let end_angle = match (self.fields.contains_key("end_angle"), self.fields.contains_key("angle_step")) {
                    (true, _) => self.finite(msg, "end_angle")?,
                    (false, true) => {
                        let step = self.finite(msg, "angle_step")?;
                        start_angle + step * ranges.len().saturating_sub(1) as f64
                    }
                    (false, false) => return refuse("the mapping gives neither end_angle nor angle_step"),
                };
                if !end_angle.is_finite() {
                    return refuse(format!("the scan's end angle is {end_angle}"));
                }
                let scan = LaserScan {
                    timestamp: Some(timestamp),
                    frame_id,
                    pose: Some(identity_pose()),
                    start_angle,
                    end_angle,
                    ranges,
                    intensities,
                };
                encode(&scan, &mut bytes)?;
                Out::LaserScan
            }
            Target::PointCloud => {
                encode(&self.point_cloud(msg, timestamp, frame_id)?, &mut bytes)?;
                Out::PointCloud
            }
            Target::PoseInFrame => {
                let pose = Pose { position: Some(self.position(msg)?), orientation: Some(self.orientation(msg)?) };
                encode(&PoseInFrame { timestamp: Some(timestamp), frame_id, pose: Some(pose) }, &mut bytes)?;
                Out::PoseInFrame
            }
            Target::FrameTransform => {
                let transform = FrameTransform {
                    timestamp: Some(timestamp),
                    parent_frame_id: frame_id,
                    child_frame_id: self.frame_text(&self.child_frame, msg, channel)?,
                    translation: Some(self.position(msg)?),
                    rotation: Some(self.orientation(msg)?),
                };
                encode(&transform, &mut bytes)?;
                Out::FrameTransform
            }
            Target::LocationFix => {
                let latitude = self.finite(msg, "latitude")?;
                let longitude = self.finite(msg, "longitude")?;
                if !(-90.0..=90.0).contains(&latitude) || !(-180.0..=180.0).contains(&longitude) {
                    return refuse(format!("latitude {latitude} or longitude {longitude} is out of range"));
                }
                let altitude = match self.fields.get("altitude") {
                    Some(_) => self.finite(msg, "altitude")?,
                    None => 0.0,
                };
                let fix = LocationFix {
                    timestamp: Some(timestamp),
                    frame_id,
                    latitude,
                    longitude,
                    altitude,
                    ..LocationFix::default()
                };
                encode(&fix, &mut bytes)?;
                Out::LocationFix
            }
        };
        Ok(Converted { out, bytes })
    }

    fn image(
        &self,
        msg: &StructValue,
        timestamp: Timestamp,
        frame_id: String,
        bytes: &mut Vec<u8>,
    ) -> Result<Out, Refusal> {
        let data = self.bytes_of(msg, "data")?;
        let code = match self.fields.get("pixelformat") {
            Some(_) => Some(self.integer(msg, "pixelformat")?),
            None => None,
        };
        let compressed = match (self.target, code) {
            (Target::CompressedImage, _) => Some(self.encoding.clone().unwrap_or_else(|| "jpeg".into())),
            (_, Some(code)) => pixels::compressed_format(code).map(str::to_owned),
            (_, None) => None,
        };
        if let Some(format) = compressed {
            if data.is_empty() {
                return refuse("a compressed image with no data");
            }
            let image = CompressedImage { timestamp: Some(timestamp), frame_id, data: data.to_vec().into(), format };
            encode(&image, bytes)?;
            return Ok(Out::CompressedImage);
        }
        let format = match code {
            Some(code) => pixels::by_code(code)
                .ok_or_else(|| Refusal(format!("unknown pixel format {code} (0x{:08x})", code as u32)))?,
            None => {
                let e = self.encoding.as_deref().unwrap_or("");
                pixels::by_encoding(e).ok_or_else(|| Refusal(format!("unknown encoding {e:?}")))?
            }
        };
        let width = self.integer(msg, "width")?;
        let height = self.integer(msg, "height")?;
        let (Ok(width), Ok(height)) = (u32::try_from(width), u32::try_from(height)) else {
            return refuse(format!("width {width} or height {height} is negative or too large"));
        };
        if width == 0 || height == 0 {
            return refuse(format!("a {width}x{height} image"));
        }
        let row = u64::from(width) * u64::from(format.bytes_per_pixel_num) / u64::from(format.bytes_per_pixel_den);
        let stride = match self.fields.get("row_stride") {
            Some(_) => self.integer(msg, "row_stride")?,
            None => 0,
        };
        // Senders that leave row_stride 0 mean packed rows.
        let step = if stride == 0 {
            row
        } else {
            u64::try_from(stride).map_err(|_| Refusal(format!("row stride {stride}")))?
        };
        if step < row {
            return refuse(format!(
                "row stride {step} is less than {row} bytes for {width} {} pixels",
                format.encoding
            ));
        }
        // A stride from an int64 member times a height can overflow: that is an inconsistent image too.
        let want = step
            .checked_mul(u64::from(height))
            .and_then(|n| n.checked_mul(u64::from(format.rows_num)))
            .map(|n| n / u64::from(format.rows_den))
            .ok_or_else(|| Refusal(format!("a row of {step} bytes times {height} rows is too large")))?;
        if data.len() as u64 != want {
            return refuse(format!(
                "{width}x{height} {} with a row of {step} bytes is {want} bytes, but the data has {}",
                format.encoding,
                data.len()
            ));
        }
        let step = u32::try_from(step).map_err(|_| Refusal(format!("row stride {step} is too large")))?;
        let image = RawImage {
            timestamp: Some(timestamp),
            frame_id,
            width,
            height,
            encoding: format.encoding.to_owned(),
            step,
            data: data.to_vec().into(),
        };
        encode(&image, bytes)?;
        Ok(Out::RawImage)
    }

    /// Packs the x, y (and z, intensity) arrays as little-endian float32 points.
    fn point_cloud(&self, msg: &StructValue, timestamp: Timestamp, frame_id: String) -> Result<PointCloud, Refusal> {
        let mut columns = Vec::new();
        for role in ["x", "y", "z", "intensity"] {
            if self.fields.contains_key(role) {
                columns.push((role, self.numbers(msg, role)?));
            }
        }
        let Some(n) = columns.first().map(|(_, c)| c.len()) else { return refuse("the mapping gives no x member") };
        if let Some((role, c)) = columns.iter().find(|(_, c)| c.len() != n) {
            return refuse(format!("{} {role} values for {n} x values", c.len()));
        }
        let stride = 4 * columns.len();
        let mut data = Vec::with_capacity(n * stride);
        for i in 0..n {
            for (_, c) in &columns {
                data.extend_from_slice(&(c[i] as f32).to_le_bytes());
            }
        }
        let fields = columns
            .iter()
            .enumerate()
            .map(|(k, (role, _))| PackedElementField {
                name: (*role).to_owned(),
                offset: 4 * k as u32,
                r#type: NumericType::Float32 as i32,
            })
            .collect();
        Ok(PointCloud {
            timestamp: Some(timestamp),
            frame_id,
            pose: Some(identity_pose()),
            point_stride: stride as u32,
            fields,
            data: data.into(),
        })
    }

    fn timestamp(&self, msg: &StructValue, recv_utime: i64) -> Result<Timestamp, Refusal> {
        let nanos: i128 = match &self.time {
            Time::Receive => i128::from(recv_utime) * 1000,
            Time::Field { path, nanos_per_unit } => {
                let v = lookup(msg, path)?;
                match v.as_i64() {
                    Some(n) => i128::from(n) * i128::from(*nanos_per_unit),
                    None => match as_f64(v) {
                        Some(f) if f.is_finite() => (f * *nanos_per_unit as f64) as i128,
                        _ => return refuse(format!("timestamp {path} is not a finite number")),
                    },
                }
            }
        };
        let sec = nanos.div_euclid(1_000_000_000);
        let nsec = nanos.rem_euclid(1_000_000_000) as u32;
        match u32::try_from(sec) {
            Ok(sec) => Ok(Timestamp::new(sec, nsec)),
            Err(_) => refuse(format!("timestamp {nanos} ns is outside what Foxglove's time holds (1970 to 2106)")),
        }
    }

    fn frame_text(&self, frame: &Frame, msg: &StructValue, channel: &str) -> Result<String, Refusal> {
        match frame {
            Frame::Fixed(text) => Ok(text.replace("{channel}", channel)),
            Frame::Field(path) => match lookup(msg, path)? {
                Value::String(s) => Ok(s.clone()),
                other => refuse(format!("frame id {path} is {}, not a string", other.kind_name())),
            },
        }
    }

    fn field<'v>(&self, msg: &'v StructValue, role: &str) -> Result<&'v Value, Refusal> {
        let path = self.fields.get(role).ok_or_else(|| Refusal(format!("the mapping gives no member for {role}")))?;
        lookup(msg, path)
    }

    fn integer(&self, msg: &StructValue, role: &str) -> Result<i64, Refusal> {
        let v = self.field(msg, role)?;
        v.as_i64().ok_or_else(|| Refusal(format!("{role} is {}, not an integer", v.kind_name())))
    }

    fn finite(&self, msg: &StructValue, role: &str) -> Result<f64, Refusal> {
        let v = self.field(msg, role)?;
        match as_f64(v) {
            Some(f) if f.is_finite() => Ok(f),
            Some(f) => refuse(format!("{role} is {f}")),
            None => refuse(format!("{role} is {}, not a number", v.kind_name())),
        }
    }

    fn numbers(&self, msg: &StructValue, role: &str) -> Result<Vec<f64>, Refusal> {
        match self.field(msg, role)? {
            Value::Array(items) => items
                .iter()
                .map(|v| as_f64(v).ok_or_else(|| Refusal(format!("{role} holds {}", v.kind_name()))))
                .collect(),
            Value::Bytes(b) => Ok(b.iter().map(|&x| f64::from(x)).collect()),
            other => refuse(format!("{role} is {}, not an array", other.kind_name())),
        }
    }

    fn bytes_of<'v>(&self, msg: &'v StructValue, role: &str) -> Result<&'v [u8], Refusal> {
        match self.field(msg, role)? {
            Value::Bytes(b) => Ok(b),
            other => refuse(format!("{role} is {}, not bytes", other.kind_name())),
        }
    }

    fn finite_numbers(&self, msg: &StructValue, role: &str, n: usize) -> Result<Vec<f64>, Refusal> {
        let v = self.numbers(msg, role)?;
        if v.len() < n {
            return refuse(format!("{role} has {} numbers, not {n}", v.len()));
        }
        if let Some(bad) = v[..n].iter().find(|f| !f.is_finite()) {
            return refuse(format!("{role} holds {bad}"));
        }
        Ok(v)
    }

    fn position(&self, msg: &StructValue) -> Result<Vector3, Refusal> {
        let p = self.finite_numbers(msg, "position", 3)?;
        Ok(Vector3 { x: p[0], y: p[1], z: p[2] })
    }

    fn orientation(&self, msg: &StructValue) -> Result<Quaternion, Refusal> {
        let q = self.finite_numbers(msg, "orientation", 4)?;
        Ok(match self.quaternion {
            QuaternionOrder::Wxyz => Quaternion { w: q[0], x: q[1], y: q[2], z: q[3] },
            QuaternionOrder::Xyzw => Quaternion { x: q[0], y: q[1], z: q[2], w: q[3] },
        })
    }
}

/// The scan's origin at its frame's origin (LCM's scan types carry no pose of their own).
fn identity_pose() -> Pose {
    Pose {
        position: Some(Vector3 { x: 0.0, y: 0.0, z: 0.0 }),
        orientation: Some(Quaternion { x: 0.0, y: 0.0, z: 0.0, w: 1.0 }),
    }
}

fn encode(message: &impl Encode, out: &mut Vec<u8>) -> Result<(), Refusal> {
    if let Some(n) = message.encoded_len() {
        out.reserve(n);
    }
    message.encode(out).map_err(|e| Refusal(format!("encoding failed: {e}")))
}

/// The member at dotted `path`.
fn lookup<'v>(msg: &'v StructValue, path: &str) -> Result<&'v Value, Refusal> {
    let mut at = msg;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let v = at.get(part).ok_or_else(|| Refusal(format!("{} has no member {part}", at.ty)))?;
        if parts.peek().is_none() {
            return Ok(v);
        }
        at = v.as_struct().ok_or_else(|| Refusal(format!("{part} is not a struct")))?;
    }
    refuse("an empty member path")
}

fn as_f64(v: &Value) -> Option<f64> {
    match *v {
        Value::Float(f) => Some(f64::from(f)),
        Value::Double(f) => Some(f),
        _ => v.as_i64().map(|i| i as f64),
    }
}
