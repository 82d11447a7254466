//! Pixel formats: Camunits' codes (libbot's `bot_core.image_t` `PIXEL_FORMAT_*` consts) and Foxglove's RawImage
//! encodings, with the bytes each takes, so that an image's data length can be checked before it is sent.

/// One RawImage encoding and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PixelFormat {
    /// Foxglove's name for it.
    pub encoding: &'static str,
    /// Bytes per pixel in a row, as a fraction (num / den).
    pub bytes_per_pixel_num: u32,
    pub bytes_per_pixel_den: u32,
    /// Rows of `step` bytes per image row, as a fraction (NV12's chroma plane adds half the rows).
    pub rows_num: u32,
    pub rows_den: u32,
}

const fn packed(encoding: &'static str, bytes: u32) -> PixelFormat {
    PixelFormat { encoding, bytes_per_pixel_num: bytes, bytes_per_pixel_den: 1, rows_num: 1, rows_den: 1 }
}

/// Foxglove's RawImage encodings (the SDK's `RawImage::data` docs), aliases included.
const FORMATS: [PixelFormat; 19] = [
    packed("uyvy", 2),
    packed("yuv422", 2),
    packed("yuyv", 2),
    packed("yuv422_yuy2", 2),
    PixelFormat { encoding: "nv12", bytes_per_pixel_num: 1, bytes_per_pixel_den: 1, rows_num: 3, rows_den: 2 },
    packed("rgb8", 3),
    packed("rgba8", 4),
    packed("bgr8", 3),
    packed("8UC3", 3),
    packed("bgra8", 4),
    packed("32FC1", 4),
    packed("bayer_rggb8", 1),
    packed("bayer_bggr8", 1),
    packed("bayer_gbrg8", 1),
    packed("bayer_grbg8", 1),
    packed("mono8", 1),
    packed("8UC1", 1),
    packed("mono16", 2),
    packed("16UC1", 2),
];

/// The names of every encoding a mapping file may give.
pub(crate) const ENCODINGS: [&str; 19] = {
    let mut names = [""; 19];
    let mut i = 0;
    while i < FORMATS.len() {
        names[i] = FORMATS[i].encoding;
        i += 1;
    }
    names
};

/// The encoding called `name`.
pub(crate) fn by_encoding(name: &str) -> Option<PixelFormat> {
    FORMATS.iter().copied().find(|f| f.encoding == name)
}

/// Camunits' codes that Foxglove shows uncompressed, and as what. The others (big-endian 16-bit, planar YUV,
/// 16-bit Bayer) have no RawImage encoding, so images in them are refused.
const CODES: [(i32, &str); 14] = [
    (1498831189, "uyvy"),       // PIXEL_FORMAT_UYVY
    (1448695129, "yuyv"),       // PIXEL_FORMAT_YUYV
    (842094158, "nv12"),        // PIXEL_FORMAT_NV12
    (1497715271, "mono8"),      // PIXEL_FORMAT_GRAY
    (859981650, "rgb8"),        // PIXEL_FORMAT_RGB
    (861030210, "bgr8"),        // PIXEL_FORMAT_BGR
    (876758866, "rgba8"),       // PIXEL_FORMAT_RGBA
    (877807426, "bgra8"),       // PIXEL_FORMAT_BGRA
    (825770306, "bayer_bggr8"), // PIXEL_FORMAT_BAYER_BGGR
    (844650584, "bayer_gbrg8"), // PIXEL_FORMAT_BAYER_GBRG
    (861427800, "bayer_grbg8"), // PIXEL_FORMAT_BAYER_GRBG
    (878205016, "bayer_rggb8"), // PIXEL_FORMAT_BAYER_RGGB
    (909199180, "mono16"),      // PIXEL_FORMAT_LE_GRAY16
    (842221382, "32FC1"),       // PIXEL_FORMAT_FLOAT_GRAY32
];

/// Camunits' code for MJPEG: a CompressedImage.
pub(crate) const MJPEG: i32 = 1196444237;

/// The RawImage encoding of Camunits' `code`.
pub(crate) fn by_code(code: i64) -> Option<PixelFormat> {
    CODES.iter().find(|(c, _)| i64::from(*c) == code).and_then(|(_, e)| by_encoding(e))
}

/// The CompressedImage format of Camunits' `code`, if it is a compressed one.
pub(crate) fn compressed_format(code: i64) -> Option<&'static str> {
    (code == i64::from(MJPEG)).then_some("jpeg")
}
