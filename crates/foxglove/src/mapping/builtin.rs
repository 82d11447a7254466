//! The built-in mappings: libbot's `bot_core` types (`tests/corpus/bot_core/`, member for member libbot2's) and
//! Nerve's example types (`examples/types/`).

use std::collections::BTreeMap;

use super::{Frame, Mapping, QuaternionOrder, Target, Time};

fn mapping(type_name: &str, target: Target, fields: &[(&str, &str)]) -> Mapping {
    Mapping {
        type_name: type_name.into(),
        target,
        fields: fields.iter().map(|(r, p)| (r.to_string(), p.to_string())).collect::<BTreeMap<_, _>>(),
        frame: Frame::Fixed("{channel}".into()),
        child_frame: Frame::Fixed("{channel}".into()),
        time: Time::Field { path: "utime".into(), nanos_per_unit: 1000 },
        encoding: None,
        quaternion: QuaternionOrder::Wxyz,
    }
}

/// Every built-in mapping. Sensors are in a frame named after their channel; libbot's poses are in its `local`
/// frame, and a rigid transform takes the channel's frame into `local`.
pub(super) fn all() -> Vec<Mapping> {
    let bot_image = [
        ("width", "width"),
        ("height", "height"),
        ("row_stride", "row_stride"),
        ("pixelformat", "pixelformat"),
        ("data", "data"),
    ];
    let ex_image = [("width", "width"), ("height", "height"), ("pixelformat", "pixelformat"), ("data", "data")];
    let bot_lidar =
        [("ranges", "ranges"), ("intensities", "intensities"), ("start_angle", "rad0"), ("angle_step", "radstep")];
    let ex_laser = [("ranges", "ranges"), ("start_angle", "rad0"), ("angle_step", "radstep")];
    let pose = [("position", "pos"), ("orientation", "orientation")];
    let local = |mut m: Mapping| {
        m.frame = Frame::Fixed("local".into());
        m
    };
    vec![
        mapping("bot_core.image_t", Target::Image, &bot_image),
        mapping("bot_core.planar_lidar_t", Target::LaserScan, &bot_lidar),
        local(mapping("bot_core.pose_t", Target::PoseInFrame, &pose)),
        local(mapping(
            "bot_core.rigid_transform_t",
            Target::FrameTransform,
            &[("position", "trans"), ("orientation", "quat")],
        )),
        mapping("exlcm.image_t", Target::Image, &ex_image),
        mapping("exlcm.laser_t", Target::LaserScan, &ex_laser),
        local(mapping("exlcm.pose_t", Target::PoseInFrame, &pose)),
    ]
}
