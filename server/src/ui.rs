//! The web page at `/ui`: one HTML page, a style sheet and plain JavaScript modules, built into
//! the binary (nothing is fetched from anywhere else, and nothing is built with Node).
//!
//! The page holds no data of its own: every view reads the JSON API with the token the user
//! enters (kept for the tab only, in `sessionStorage`), and every change goes through the same
//! API, behind the same checks as any client's (authentication, Host, Origin, JSON bodies).
//! Stored text is only ever set as text (`textContent`, never HTML), and every asset is sent with
//! a Content-Security-Policy that allows scripts, styles and requests from this origin only, no
//! inline script or style, no framing and no form submission: a `<script>` stored as a memory is
//! shown as those characters, and could not run if it were parsed.

use axum::extract::Path;
use axum::http::{header, HeaderName, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::error::{ApiError, Code};

/// What every asset may load and do.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
     img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The assets by name, with their media types.
const ASSETS: &[(&str, &str, &str)] = &[
    ("index.html", "text/html; charset=utf-8", include_str!("../ui/index.html")),
    ("app.css", "text/css; charset=utf-8", include_str!("../ui/app.css")),
    ("app.js", "text/javascript; charset=utf-8", include_str!("../ui/app.js")),
    ("api.js", "text/javascript; charset=utf-8", include_str!("../ui/api.js")),
    ("dom.js", "text/javascript; charset=utf-8", include_str!("../ui/dom.js")),
    ("state.js", "text/javascript; charset=utf-8", include_str!("../ui/state.js")),
    ("views.js", "text/javascript; charset=utf-8", include_str!("../ui/views.js")),
    ("notes.js", "text/javascript; charset=utf-8", include_str!("../ui/notes.js")),
    ("chart.js", "text/javascript; charset=utf-8", include_str!("../ui/chart.js")),
    ("icon.svg", "image/svg+xml", include_str!("../ui/icon.svg")),
];

/// The bytes of every asset together.
pub fn assets_bytes() -> usize {
    ASSETS.iter().map(|(_, _, body)| body.len()).sum()
}

/// `/ui`, `/ui/` and `/ui/<asset>`, open without a token (the page asks for one; the data it
/// shows needs it).
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/ui", get(|| async { asset("index.html") }))
        .route("/ui/", get(|| async { asset("index.html") }))
        .route("/ui/{name}", get(|Path(name): Path<String>| async move { asset(&name) }))
}

fn asset(name: &str) -> Response {
    let Some((_, kind, body)) = ASSETS.iter().find(|(n, _, _)| *n == name) else {
        return ApiError::new(Code::NotFound, "no such asset").into_response();
    };
    let mut response = (*body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    // nosniff, no framing and no referrer come with every response (`guards::outer`).
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_assets_stay_small_and_never_build_html_from_strings() {
        assert!(assets_bytes() <= 300 * 1024, "{} bytes", assets_bytes());
        for (name, _, body) in ASSETS {
            if name.ends_with(".js") {
                for banned in [
                    "innerHTML",
                    "outerHTML",
                    "insertAdjacentHTML",
                    "document.write",
                    "eval(",
                    "new Function",
                ] {
                    assert!(!body.contains(banned), "{name} uses {banned}");
                }
            }
            if name.ends_with(".html") {
                assert!(!body.contains("<script>") && !body.contains(" style="), "{name} has inline code");
            }
        }
    }
}
