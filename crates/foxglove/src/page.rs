//! The page and its assets, built into the binary: `index.html`, `app.js` (our code) and uPlot (vendored under
//! `web/vendor/uplot`, MIT, see its `NERVE.md`). Nothing is fetched from elsewhere when the page loads.

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
        _ => return None,
    })
}
