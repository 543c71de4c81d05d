//! The page's files, built from `web/` (its sources, the client generated from
//! `proto/queens.proto`, the pinned tools in `web/package-lock.json`) into `web/dist/` and
//! committed there, so that the binary embeds them with no Node at `cargo build`. A test
//! rebuilds them from their sources and fails when the committed ones differ.
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
        bytes: include_bytes!("../../web/dist/index.html"),
    },
    Asset {
        path: "/app.js",
        content_type: "text/javascript; charset=utf-8",
        bytes: include_bytes!("../../web/dist/app.js"),
    },
    Asset {
        path: "/app.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("../../web/dist/app.css"),
    },
];

/// The file served at `path` (`/index.html` is `/`).
pub(super) fn find(path: &str) -> Option<&'static Asset> {
    let path = if path == "/index.html" { "/" } else { path };
    ASSETS.iter().find(|asset| asset.path == path)
}
