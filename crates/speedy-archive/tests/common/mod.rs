//! Helpers shared by the import/export tests.
#![allow(dead_code)]

use speedy_archive::{Archive, Discovery, Object, Page};
use std::path::{Path, PathBuf};

/// A fixture of tests/data.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A file of the fixture site (tests/data-tools/site), the bytes the server sent.
pub fn site_file(path: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data-tools/site")
            .join(path),
    )
    .unwrap()
}

/// The path of a URL without its origin (`http://127.0.0.1:1/css/a.css` → `css/a.css`).
pub fn rel(url: &str) -> String {
    let u = speedy_archive::url::Url::parse(url).unwrap_or_else(|| panic!("{url}: not a URL"));
    u.path[1..].to_string()
}

/// The object of `page` whose URL path is `path`.
pub fn obj<'a>(a: &'a Archive, page: &Page, path: &str) -> &'a Object {
    page.objects
        .iter()
        .map(|&i| &a.objects[i])
        .find(|o| rel(&o.url) == path)
        .unwrap_or_else(|| panic!("{path} not in page {}: {:?}", page.name, paths(a, page)))
}

/// The URL paths of a page's objects, sorted.
pub fn paths(a: &Archive, page: &Page) -> Vec<String> {
    let mut v: Vec<String> = page
        .objects
        .iter()
        .map(|&i| rel(&a.objects[i].url))
        .collect();
    v.sort();
    v
}

/// The parent's URL path of an object (`None` for a root).
pub fn parent(a: &Archive, o: &Object) -> Option<String> {
    o.discovery.parent().map(|p| rel(&a.objects[p].url))
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh directory named after the test.
    pub fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!(
            "speedy-archive-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Checks the structural promises every imported archive keeps: valid ids, parents in the
/// same page and listed before their children, parsed offsets inside the parent's body.
pub fn check_structure(a: &Archive) {
    a.validate().unwrap();
    for p in &a.pages {
        assert_eq!(p.objects[0], p.root, "page {}: root first", p.name);
        assert_eq!(a.objects[p.root].discovery, Discovery::Root);
        for (k, &id) in p.objects.iter().enumerate() {
            let o = &a.objects[id];
            if let Some(par) = o.discovery.parent() {
                let pk = p.objects.iter().position(|&x| x == par);
                assert!(
                    pk.is_some_and(|pk| pk < k),
                    "page {}: {} has parent {} outside the page or after it",
                    p.name,
                    o.url,
                    a.objects[par].url
                );
            } else {
                assert_eq!(id, p.root, "only the root has no parent");
            }
            if let Discovery::Parsed { parent, offset } = o.discovery {
                assert!(
                    offset <= a.body(parent).len().max(a.objects[parent].body.size()),
                    "{}: offset {offset} beyond its parent",
                    o.url
                );
            }
        }
    }
}
