//! The page's files: the document and style sheet as written (`web/src/`), and the script
//! built from `web/src/` and the client generated from `proto/queens.proto` (with the pinned
//! tools of `web/package-lock.json`) into `web/dist/app.js`, committed, so that the binary
//! embeds them with no Node at `cargo build`. A test rebuilds the script from its sources
//! and fails when the committed one differs.
//!
//! Not here: how they are served (`mod.rs`), how they are built (`web/build.mjs`).

/// One file of the page.
pub(super) struct Asset {
    /// Its path on the server.
    pub path: &'static str,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its bytes.
    pub bytes: &'static [u8],
}

/// The page's files: the document, its script (the page's code, the generated client and
/// Connect's gRPC-Web transport in one bundle) and its style sheet.
pub(super) const ASSETS: [Asset; 3] = [
    Asset {
        path: "/",
        content_type: "text/html; charset=utf-8",
        bytes: include_bytes!("../../web/src/index.html"),
    },
    Asset {
        path: "/app.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../web/dist/app.js"),
    },
    Asset {
        path: "/app.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../../web/src/app.css"),
    },
];

/// The file served at `path` (`/index.html` is `/`).
pub(super) fn find(path: &str) -> Option<&'static Asset> {
    let path = if path == "/index.html" { "/" } else { path };
    ASSETS.iter().find(|asset| asset.path == path)
}
