//! The page and its assets, built into the binary: `index.html`, `app.js` (our code), uPlot (vendored under
//! `web/vendor/uplot`, MIT) for the plots and protobufjs (bundled under `web/vendor/protobufjs`, BSD-3-Clause, with
//! `long`, Apache-2.0) to decode the pictures' protobuf; see each one's `NERVE.md`. Nothing is fetched from
//! elsewhere when the page loads.

/// The content type and bytes served for `path`, if any.
pub(crate) fn asset(path: &str) -> Option<(&'static str, &'static [u8])> {
    Some(match path {
        "/" | "/index.html" => ("text/html; charset=utf-8", include_bytes!("../web/index.html")),
        "/app.js" => ("text/javascript; charset=utf-8", include_bytes!("../web/app.js")),
        "/app.css" => ("text/css; charset=utf-8", include_bytes!("../web/app.css")),
        "/uPlot.iife.min.js" => {
            ("text/javascript; charset=utf-8", include_bytes!("../web/vendor/uplot/uPlot.iife.min.js"))
        }
        "/uPlot.min.css" => ("text/css; charset=utf-8", include_bytes!("../web/vendor/uplot/uPlot.min.css")),
        "/LICENSE-uPlot.txt" => ("text/plain; charset=utf-8", include_bytes!("../web/vendor/uplot/LICENSE")),
        "/protobuf.min.js" => {
            ("text/javascript; charset=utf-8", include_bytes!("../web/vendor/protobufjs/protobuf.min.js"))
        }
        "/LICENSE-protobufjs.txt" => ("text/plain; charset=utf-8", include_bytes!("../web/vendor/protobufjs/LICENSE")),
        "/LICENSE-long.txt" => ("text/plain; charset=utf-8", include_bytes!("../web/vendor/protobufjs/LICENSE-long")),
        _ => return None,
    })
}
