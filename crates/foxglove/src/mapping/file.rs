//! The mapping file a user writes (`nerve foxglove --mappings FILE`), in TOML:
//!
//! ```toml
//! # builtin = false       # leave out the built-in mappings (default: keep them; a file's mapping of a type
//! #                       # replaces the built-in one)
//!
//! [[mapping]]
//! type = "acme.camera_t"          # the LCM type's full name
//! schema = "foxglove.RawImage"    # RawImage, CompressedImage, LaserScan, PointCloud, PoseInFrame, FrameTransform,
//!                                 # LocationFix
//! encoding = "rgb8"               # RawImage: the encoding when no pixelformat member gives it;
//!                                 # CompressedImage: the format (jpeg, png, webp, avif)
//! frame_id = "camera"             # fixed text ("{channel}" is the channel's name; the default) ...
//! # frame_id_field = "frame"      # ... or a string member; for a FrameTransform this is the parent frame,
//! # child_frame_id = "{channel}"  # and child_frame_id / child_frame_id_field the child frame
//! timestamp = "utime"             # an integer member (the default "utime"), or "receive" for the receive time
//! timestamp_unit = "us"           # s, ms, us (the default) or ns
//! # quaternion = "wxyz"           # the orientation's order in the message: wxyz (libbot's, the default) or xyzw
//!
//! [mapping.fields]                # the members (dotted paths into nested structs) for the schema's roles
//! width = "w"
//! height = "h"
//! data = "pixels"
//! # row_stride = "stride"         # optional; 0 or absent means packed rows
//! # pixelformat = "format"        # optional: a Camunits/libbot PIXEL_FORMAT_* code (MJPEG is a CompressedImage)
//! ```
//!
//! Roles (those after "optionally" may be left out): RawImage `width`, `height`, `data`, optionally `row_stride`,
//! `pixelformat`; CompressedImage `data`, optionally `pixelformat`; LaserScan `ranges`, `start_angle`, and
//! `angle_step` or `end_angle`, optionally `intensities`; PointCloud `x`, `y`, optionally `z`, `intensity` (arrays
//! of one length, sent as float32); PoseInFrame and FrameTransform `position` (3 numbers),
//! `orientation` (4); LocationFix `latitude`, `longitude`, optionally `altitude`. Unknown keys, schemas and roles
//! are errors, with the mapping they are in.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

use super::{Frame, Mapping, QuaternionOrder, Target, Time};

/// What is wrong with a mapping file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingFileError {
    /// Every problem found, each saying where.
    pub problems: Vec<String>,
}

impl fmt::Display for MappingFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problems.join("\n"))
    }
}

impl std::error::Error for MappingFileError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileText {
    #[serde(default = "yes")]
    builtin: bool,
    #[serde(default)]
    mapping: Vec<MappingText>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MappingText {
    #[serde(rename = "type")]
    type_name: String,
    schema: String,
    #[serde(default)]
    fields: BTreeMap<String, String>,
    encoding: Option<String>,
    frame_id: Option<String>,
    frame_id_field: Option<String>,
    child_frame_id: Option<String>,
    child_frame_id_field: Option<String>,
    timestamp: Option<String>,
    timestamp_unit: Option<String>,
    quaternion: Option<String>,
}

/// A parsed file.
pub(super) struct Parsed {
    pub builtin: bool,
    pub mappings: Vec<Mapping>,
}

/// Reads a mapping file's text.
pub(super) fn parse(text: &str) -> Result<Parsed, MappingFileError> {
    let file: FileText =
        toml::from_str(text).map_err(|e| MappingFileError { problems: vec![e.to_string().trim_end().to_owned()] })?;
    let mut problems = Vec::new();
    let mut mappings: Vec<Mapping> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (i, m) in file.mapping.into_iter().enumerate() {
        let at = format!("mapping {} ({})", i + 1, m.type_name);
        let before = problems.len();
        let mut problem = |p: String| problems.push(format!("{at}: {p}"));
        if m.type_name.trim().is_empty() {
            problem("type is empty".into());
        }
        let target = Target::ALL.iter().find(|(_, n)| *n == m.schema || n.strip_prefix("foxglove.") == Some(&m.schema));
        let Some(&(target, _)) = target else {
            let names: Vec<&str> = Target::ALL.iter().map(|(_, n)| *n).collect();
            problem(format!("schema {:?} is not one of {}", m.schema, names.join(", ")));
            continue;
        };
        let roles: Vec<&str> = target.roles().iter().map(|(r, _, _)| *r).collect();
        for role in m.fields.keys() {
            if !roles.contains(&role.as_str()) {
                problem(format!("{} has no role {role:?} (its roles: {})", target.name(), roles.join(", ")));
            }
        }
        for (role, required, _) in target.roles() {
            if *required && !m.fields.contains_key(*role) {
                problem(format!("fields.{role} is missing ({} needs it)", target.name()));
            }
        }
        if target == Target::LaserScan && !m.fields.contains_key("angle_step") && !m.fields.contains_key("end_angle") {
            problem("a LaserScan needs fields.angle_step or fields.end_angle".into());
        }
        let mut frame = |fixed: Option<String>, field: Option<String>, key: &str| match (fixed, field) {
            (Some(_), Some(_)) => {
                problem(format!("give {key} or {key}_field, not both"));
                Frame::Fixed("{channel}".into())
            }
            (Some(t), None) => Frame::Fixed(t),
            (None, Some(f)) => Frame::Field(f),
            (None, None) => Frame::Fixed("{channel}".into()),
        };
        let frame_id = frame(m.frame_id, m.frame_id_field, "frame_id");
        let child_frame = frame(m.child_frame_id, m.child_frame_id_field, "child_frame_id");
        let nanos_per_unit = match m.timestamp_unit.as_deref().unwrap_or("us") {
            "s" => 1_000_000_000,
            "ms" => 1_000_000,
            "us" => 1000,
            "ns" => 1,
            other => {
                problem(format!("timestamp_unit {other:?} is not one of s, ms, us, ns"));
                1000
            }
        };
        let time = match m.timestamp.as_deref() {
            Some("receive") => Time::Receive,
            Some(path) => Time::Field { path: path.into(), nanos_per_unit },
            None => Time::Field { path: "utime".into(), nanos_per_unit },
        };
        let quaternion = match m.quaternion.as_deref() {
            None | Some("wxyz") => QuaternionOrder::Wxyz,
            Some("xyzw") => QuaternionOrder::Xyzw,
            Some(other) => {
                problem(format!("quaternion {other:?} is not wxyz or xyzw"));
                QuaternionOrder::Wxyz
            }
        };
        if let (Target::CompressedImage, Some(f)) = (target, m.encoding.as_deref()) {
            if !["jpeg", "png", "webp", "avif"].contains(&f) {
                problem(format!("encoding {f:?} is not a CompressedImage format (jpeg, png, webp, avif)"));
            }
        }
        if seen.contains(&m.type_name) {
            problem("the type is mapped twice".into());
        }
        seen.push(m.type_name.clone());
        if problems.len() == before {
            mappings.push(Mapping {
                type_name: m.type_name,
                target,
                fields: m.fields,
                frame: frame_id,
                child_frame,
                time,
                encoding: m.encoding,
                quaternion,
            });
        }
    }
    if problems.is_empty() {
        Ok(Parsed { builtin: file.builtin, mappings })
    } else {
        Err(MappingFileError { problems })
    }
}
