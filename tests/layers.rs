//! Layers go one way (issue 45): no module of `src/` imports a module that imports it back,
//! directly or through others, and the same for the Python packages of the emulator and the
//! tracer. The graph is drawn from the sources on every run, so a new circle fails here.
//!
//! A Rust module's edges are the paths it names that start with `crate`, `super` or `self`
//! (in `use` items and in code), each resolved to the deepest module it reaches; test modules
//! (`#[cfg(test)]`) are left out. A Python module's edges are its imports of the same package,
//! at any depth (a function-level import is an edge too: it is still a dependency).
//! `LAYERS_WHY=migrate::checker cargo test --test layers` prints the path behind each edge of
//! that module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

type Graph = BTreeMap<String, BTreeSet<String>>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && name != "__pycache__" && name != "tests" {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == ext) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `src/lib.rs` is the crate root (``).
fn rust_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?.with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    match parts.last().map(String::as_str) {
        Some("main") if parts.len() == 1 => return None, // the binary: it only wires
        Some("lib") if parts.len() == 1 => parts.clear(),
        Some("mod") => {
            parts.pop();
        }
        _ => {}
    }
    Some(parts.join("::"))
}

/// Collects every path a file names, as segments relative to the crate root.
struct Paths<'a> {
    /// The module the file is (segments).
    module: &'a [String],
    /// Every module of the crate: a bare path whose first segment is a child module
    /// (`checker::check` in `migrate`) names that child.
    modules: &'a BTreeMap<String, PathBuf>,
    found: Vec<Vec<String>>,
}

impl Paths<'_> {
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.module.to_vec(),
            "super" => {
                let mut m = self.module.to_vec();
                m.pop()?;
                m
            }
            // A bare name alone (`autocast`) is a local; `autocast::f` names the child module.
            _ if rest.is_empty() => return None,
            child => {
                let mut m = self.module.to_vec();
                m.push(child.to_string());
                if !self.modules.contains_key(&m.join("::")) {
                    return None;
                }
                m.pop();
                m
            }
        };
        let rest = if matches!(first.as_str(), "crate" | "self" | "super") { rest } else { segments };
        let mut rest = rest;
        while let Some(("super", tail)) = rest.split_first().map(|(h, t)| (h.as_str(), t)) {
            base.pop()?;
            rest = tail;
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.push(prefix.iter().cloned().chain([n.ident.to_string()]).collect()),
            syn::UseTree::Rename(r) => self.push(prefix.iter().cloned().chain([r.ident.to_string()]).collect()),
            syn::UseTree::Glob(_) => self.push(prefix.clone()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(prefix, t)),
        }
    }

    fn push(&mut self, segments: Vec<String>) {
        if let Some(abs) = self.absolute(&segments) {
            self.found.push(abs);
        }
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.meta.require_list().is_ok_and(|l| l.tokens.to_string().contains("test")))
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if !is_cfg_test(&u.attrs) {
            self.use_tree(&mut Vec::new(), &u.tree);
        }
    }
    /// `pub(super)` and `pub(in crate::a)` say who may see an item, not what it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}
    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // `format!("{}", crate::x::y())` and friends: paths inside macro arguments count too.
        let text = m.tokens.to_string().replace(' ', "");
        for start in ["crate::", "super::", "self::"] {
            for (at, _) in text.match_indices(start) {
                if at > 0 && text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                    continue;
                }
                let path: Vec<String> = text[at..]
                    .split("::")
                    .map(|s| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>())
                    .take_while(|s| !s.is_empty())
                    .collect();
                self.push(path);
            }
        }
        syn::visit::visit_macro(self, m);
    }
}

fn rust_graph(src: &Path) -> Graph {
    let modules: BTreeMap<String, PathBuf> =
        files(src, "rs").into_iter().filter_map(|f| Some((rust_module(src, &f)?, f))).collect();
    let mut graph = Graph::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(file).expect("read");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let segments: Vec<String> =
            if module.is_empty() { Vec::new() } else { module.split("::").map(String::from).collect() };
        let mut paths = Paths { module: &segments, modules: &modules, found: Vec::new() };
        paths.visit_file(&ast);
        let edges = graph.entry(module.clone()).or_default();
        for path in paths.found {
            // The deepest module the path reaches.
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].join("::"))
                .find(|m| modules.contains_key(m))
                .unwrap_or_default();
            // The crate root only declares modules; an ancestor named as a prefix of a deeper
            // path is not a use of it.
            if target != *module && !target.is_empty() {
                if std::env::var("LAYERS_WHY").is_ok_and(|m| m == *module) {
                    eprintln!("{module} -> {target}: {}", path.join("::"));
                }
                edges.insert(target);
            }
        }
    }
    graph
}

/// A Python package's modules (`pkg.sub.mod`) and their imports within `package`.
fn python_graph(dir: &Path, package: &str) -> Graph {
    let base = dir.parent().expect("the package has a parent");
    let module_of = |file: &Path| {
        let rel = file.strip_prefix(base).expect("inside").with_extension("");
        let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        if parts.last().is_some_and(|p| p == "__init__") {
            parts.pop();
        }
        parts.join(".")
    };
    let all: BTreeMap<String, PathBuf> = files(dir, "py").into_iter().map(|f| (module_of(&f), f)).collect();
    let import = regex::Regex::new(
        r"(?m)^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)|import[ \t]+([\w., \t]+))",
    )
    .expect("regex");
    let mut graph = Graph::new();
    for (module, file) in &all {
        let is_package = file.ends_with("__init__.py");
        let text = std::fs::read_to_string(file).expect("read");
        let edges = graph.entry(module.clone()).or_default();
        let mut add = |name: String| {
            let target = (1..=name.split('.').count())
                .rev()
                .map(|n| name.split('.').take(n).collect::<Vec<_>>().join("."))
                .find(|m| all.contains_key(m));
            if let Some(t) = target.filter(|t| t != module && t != package) {
                edges.insert(t);
            }
        };
        for c in import.captures_iter(&text) {
            if let Some(from) = c.get(1) {
                let from = from.as_str();
                let dots = from.len() - from.trim_start_matches('.').len();
                let absolute = if dots == 0 {
                    from.to_string()
                } else {
                    let mut parts: Vec<&str> = module.split('.').collect();
                    let keep = parts.len() + usize::from(is_package) - dots;
                    parts.truncate(keep);
                    let rest = from.trim_start_matches('.');
                    if rest.is_empty() { parts.join(".") } else { format!("{}.{rest}", parts.join(".")) }
                };
                if !absolute.starts_with(package) {
                    continue;
                }
                // `from pkg import mod` imports a module; `from pkg.mod import name` the module.
                let names = c[2].trim_matches(|ch: char| ch == '(' || ch == ')' || ch.is_whitespace());
                for name in names.split(',').map(str::trim).filter(|n| !n.is_empty() && !n.starts_with('#')) {
                    let name = name.split_whitespace().next().unwrap_or(name);
                    let sub = format!("{absolute}.{name}");
                    add(if all.contains_key(&sub) { sub } else { absolute.clone() });
                }
            } else if let Some(names) = c.get(3) {
                for name in names.as_str().split(',').map(|n| n.split_whitespace().next().unwrap_or("")) {
                    if name.starts_with(package) {
                        add(name.to_string());
                    }
                }
            }
        }
    }
    graph
}

/// The strongly connected components of more than one module (Tarjan's algorithm).
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn connect<'g>(s: &mut State<'g>, v: &'g str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                connect(s, w);
                let lw = s.low[w];
                s.low.entry(v).and_modify(|l| *l = (*l).min(lw));
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                s.low.entry(v).and_modify(|l| *l = (*l).min(iw));
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            connect(&mut s, v);
        }
    }
    s.out
}

fn describe(graph: &Graph, found: &[Vec<String>]) -> String {
    found
        .iter()
        .map(|c| {
            let members: BTreeSet<&String> = c.iter().collect();
            let edges: Vec<String> = c
                .iter()
                .flat_map(|m| graph[m].iter().filter(|t| members.contains(t)).map(move |t| format!("    {m} -> {t}")))
                .collect();
            format!("  circle of {}: {}\n{}", c.len(), c.join(", "), edges.join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn rust_modules_import_one_way() {
    let graph = rust_graph(&root().join("src"));
    assert!(graph.len() > 50, "the graph was not drawn: {} modules", graph.len());
    let found = circles(&graph);
    assert!(
        found.is_empty(),
        "modules that import each other, directly or through others:\n{}",
        describe(&graph, &found)
    );
}

/// Everything `module` reaches through its imports, itself left out.
fn reach(graph: &Graph, module: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![module.to_string()];
    while let Some(m) = stack.pop() {
        for next in graph.get(&m).into_iter().flatten() {
            if seen.insert(next.clone()) {
                stack.push(next.clone());
            }
        }
    }
    seen
}

/// The layer picture of `src/lib.rs`, beyond "no circle": what every file kind shares (edits,
/// findings, file kinds, style) knows no rule and no handler; the Python checker and the
/// file-kind handlers sit side by side.
#[test]
fn shared_parts_sit_below_the_checker_and_the_handlers() {
    let graph = rust_graph(&root().join("src"));
    let under = |m: &str, prefix: &str| m == prefix || m.starts_with(&format!("{prefix}::"));
    for bottom in
        ["source", "migrate::target", "migrate::style", "migrate::fix", "migrate::diagnostic", "migrate::notes"]
    {
        let above: Vec<String> = reach(&graph, bottom)
            .into_iter()
            .filter(|m| {
                ["migrate::rules", "migrate::checker", "migrate::project", "migrate::facts"].iter().any(|p| under(m, p))
            })
            .collect();
        assert!(above.is_empty(), "{bottom} reaches {above:?}");
    }
    let handlers = [
        "migrate::project::deps",
        "migrate::project::json",
        "migrate::project::launch",
        "migrate::project::hardware",
        "migrate::project::text",
    ];
    for handler in handlers {
        let checker: Vec<String> =
            reach(&graph, handler).into_iter().filter(|m| under(m, "migrate::checker")).collect();
        assert!(checker.is_empty(), "{handler} reaches the checker: {checker:?}");
    }
    let project: Vec<String> =
        reach(&graph, "migrate::checker").into_iter().filter(|m| under(m, "migrate::project")).collect();
    assert!(project.is_empty(), "the checker reaches {project:?}");
}

#[test]
fn python_modules_import_one_way() {
    for (dir, package) in
        [("emulator/python/xla2tpu_emulator", "xla2tpu_emulator"), ("tracer/xla2tpu_tracer", "xla2tpu_tracer")]
    {
        let graph = python_graph(&root().join(dir), package);
        assert!(graph.len() > 5, "{dir}: the graph was not drawn");
        let found = circles(&graph);
        assert!(found.is_empty(), "{dir}: modules that import each other:\n{}", describe(&graph, &found));
    }
}

/// The checks themselves can fail: a circle built on purpose is found, with its members.
#[test]
fn a_circle_is_found() {
    let mut graph = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e")] {
        graph.entry(a.into()).or_default().insert(b.into());
        graph.entry(b.into()).or_default();
    }
    assert_eq!(circles(&graph), vec![vec!["a".to_string(), "b".into(), "c".into()]]);
    let dir = tempfile::tempdir().expect("tmp");
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("m")).expect("mkdir");
    std::fs::write(src.join("lib.rs"), "pub mod m;\npub mod n;\n").expect("write");
    std::fs::write(src.join("m/mod.rs"), "pub mod inner;\npub struct Row;\n").expect("write");
    std::fs::write(src.join("m/inner.rs"), "use super::Row;\npub fn f() -> Row { crate::n::g() }\n").expect("write");
    std::fs::write(
        src.join("n.rs"),
        "pub fn g() -> crate::m::Row { crate::m::Row }\n#[cfg(test)]\nmod tests { use crate::m::inner::f; }\n",
    )
    .expect("write");
    // Neither who may see an item (`pub(super)`) nor a local that shares a child's name is a use.
    std::fs::write(
        src.join("m/mod.rs"),
        "pub mod inner;\npub mod leaf;\npub struct Row;\npub fn k(inner: u8) -> u8 { let x = inner; x }\n",
    )
    .expect("write");
    std::fs::write(src.join("m/leaf.rs"), "pub(super) fn leaf() {}\npub(in crate::m) fn other() {}\n").expect("write");
    let graph = rust_graph(&src);
    assert_eq!(graph["m"], BTreeSet::new());
    assert_eq!(graph["m::leaf"], BTreeSet::new());
    assert_eq!(graph["m::inner"], BTreeSet::from(["m".to_string(), "n".into()]));
    assert_eq!(graph["n"], BTreeSet::from(["m".to_string()]), "test modules are left out");
    assert!(circles(&graph).is_empty());
    std::fs::write(
        src.join("m/mod.rs"),
        "pub mod inner;\npub struct Row;\npub fn h() { inner::f(); self::inner::f(); }\n",
    )
    .expect("write");
    let graph = rust_graph(&src);
    assert_eq!(circles(&graph), vec![vec!["m".to_string(), "m::inner".into(), "n".into()]]);
    let pkg = dir.path().join("pkg");
    std::fs::create_dir_all(pkg.join("sub")).expect("mkdir");
    std::fs::write(pkg.join("__init__.py"), "").expect("write");
    std::fs::write(pkg.join("sink.py"), "import os\n").expect("write");
    std::fs::write(pkg.join("report.py"), "from . import sink\nfrom .sub.advise import hint\n").expect("write");
    std::fs::write(pkg.join("sub/__init__.py"), "").expect("write");
    std::fs::write(pkg.join("sub/advise.py"), "def hint():\n    from ..report import x\n").expect("write");
    let graph = python_graph(&pkg, "pkg");
    assert_eq!(graph["pkg.report"], BTreeSet::from(["pkg.sink".to_string(), "pkg.sub.advise".into()]));
    assert_eq!(circles(&graph), vec![vec!["pkg.report".to_string(), "pkg.sub.advise".into()]]);
}
