//! Reads a crate's module graph from its sources: which modules each file's code
//! names (`crate::`, `super::`, `self::` and child paths, `use` trees expanded).
//! Shared by the layer test and the circle test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path inside its crate (`["hot", "aggregate", "local"]`; the root is empty).
pub type Module = Vec<String>;

/// One crate's modules: each file's module and the modules its code names.
pub struct Graph {
    /// Edges: module -> (module used -> first line that uses it).
    pub uses: BTreeMap<Module, BTreeMap<Module, String>>,
}

/// Every `.rs` file under `dir`.
pub fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read a source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module of `file` in the crate whose sources are under `src`.
pub fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).expect("a file under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !(stem == "mod" || (parts.is_empty() && (stem == "lib" || stem == "main"))) {
        parts.push(stem.to_string());
    }
    parts
}

/// The code of `line`, with its comment and the contents of its string and
/// character literals left out (a doc link or a message may name anything).
pub fn code(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut in_str = false;
    while let Some(c) = chars.next() {
        if in_str {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => {
                    in_str = false;
                    out.push('"');
                }
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                out.push('"');
            }
            '/' if chars.peek() == Some(&'/') => break,
            // A character literal ('{', '\''); a lifetime ('a) has no closing quote
            // right after one character.
            '\'' => {
                let rest: String = chars.clone().take(12).collect();
                if let Some(escaped) = rest.strip_prefix('\\') {
                    // Past the backslash, the escaped character and the quote.
                    let skip = escaped
                        .get(1..)
                        .and_then(|r| r.find('\''))
                        .map_or(0, |i| i + 3);
                    for _ in 0..skip {
                        chars.next();
                    }
                    out.push_str("' '");
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.next();
                    chars.next();
                    out.push_str("' '");
                } else {
                    out.push('\'');
                }
            }
            _ => out.push(c),
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths a `use` tree names, braces expanded: `a::{b, c::{d, e}}` gives
/// `a::b`, `a::c::d`, `a::c::e` (each as its segments).
pub fn expand_use(tree: &str) -> Vec<Vec<String>> {
    // Renames (`a as b`) kept apart from the path, then spaces left out.
    let spaced = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree: String = spaced.replace(" as ", "@").replace(' ', "");
    let mut out = Vec::new();
    expand_into(&tree, &[], &mut out);
    out
}

fn expand_into(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    for item in split_top(tree) {
        // A rename (`a@b`, see above) names `a`.
        let item = if item.contains('{') {
            item
        } else {
            item.split('@').next().unwrap_or(item)
        };
        let (head, group) = match item.find('{') {
            Some(at) => (&item[..at], Some(&item[at + 1..item.len() - 1])),
            None => (item, None),
        };
        let mut path = prefix.to_vec();
        path.extend(
            head.split("::")
                .filter(|s| !s.is_empty())
                .map(|s| s.trim_start_matches("::").to_string()),
        );
        match group {
            Some(g) => expand_into(g, &path, out),
            None if !path.is_empty() => out.push(path),
            None => {}
        }
    }
}

/// Splits `a, b::{c, d}, e` at its top-level commas.
fn split_top(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// `code` with each visibility restriction (`pub(crate)`, `pub(super)`,
/// `pub(self)`, `pub(in a::b)`) read as `pub`: it names who may use an item,
/// not a module the item uses.
fn without_visibility(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("pub(") {
        let inner = &rest[at + 4..];
        let restricted = ["crate)", "super)", "self)", "in "]
            .iter()
            .any(|w| inner.starts_with(w));
        match inner.find(')').filter(|_| restricted) {
            Some(close) => {
                out.push_str(&rest[..at]);
                out.push_str("pub");
                rest = &inner[close + 1..];
            }
            None => {
                out.push_str(&rest[..at + 4]);
                rest = inner;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The paths (`a::b::c`, as segments) written in `code` outside `use` trees.
pub fn paths_in(code: &str) -> Vec<Vec<String>> {
    let code = without_visibility(code);
    let bytes: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts =
            is_ident(bytes[i]) && (i == 0 || !(is_ident(bytes[i - 1]) || bytes[i - 1] == ':'));
        if !starts {
            i += 1;
            continue;
        }
        let mut segs = Vec::new();
        let mut j = i;
        loop {
            let s = j;
            while j < bytes.len() && is_ident(bytes[j]) {
                j += 1;
            }
            segs.push(bytes[s..j].iter().collect::<String>());
            if j + 2 < bytes.len()
                && bytes[j] == ':'
                && bytes[j + 1] == ':'
                && is_ident(bytes[j + 2])
            {
                j += 2;
            } else {
                break;
            }
        }
        // A call (`crate::api()`) or a macro names a function, not a module of
        // that name.
        let had_path = segs.len() > 1;
        if matches!(bytes.get(j), Some('(') | Some('!')) {
            segs.pop();
        }
        let relative = matches!(
            segs.first().map(String::as_str),
            Some("crate" | "super" | "self")
        );
        if had_path || relative {
            out.push(segs);
        }
        i = j.max(i + 1);
    }
    out
}

/// Which module of `modules` the path `path`, written in module `here` (inside
/// `inline` levels of inline `mod x { .. }`), names: the longest known prefix.
/// `None` for paths outside the crate (other crates, types, locals).
pub fn resolve(
    modules: &BTreeSet<Module>,
    here: &Module,
    inline: usize,
    path: &[String],
) -> Option<Module> {
    let mut base: Module;
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") | Some("$crate") => {
            base = Vec::new();
            rest = &path[1..];
        }
        Some("self") => {
            base = here.clone();
            rest = &path[1..];
        }
        Some("super") => {
            base = here.clone();
            let mut levels: usize = 0;
            while rest.first().is_some_and(|s| s == "super") {
                levels += 1;
                rest = &rest[1..];
            }
            // Inside an inline module, the first `super`s lead back to the file's.
            for _ in 0..levels.saturating_sub(inline) {
                base.pop()?;
            }
        }
        Some(first) if inline == 0 => {
            let mut child = here.clone();
            child.push(first.to_string());
            if !modules.contains(&child) {
                return None;
            }
            base = here.clone();
        }
        _ => return None,
    }
    let mut found = base.clone();
    for seg in rest {
        base.push(seg.clone());
        if modules.contains(&base) {
            found = base.clone();
        } else {
            break;
        }
    }
    Some(found)
}

impl Graph {
    /// The module graph of the crate whose sources are under `src`.
    pub fn read(src: &Path) -> Graph {
        let mut files = Vec::new();
        sources(src, &mut files);
        // A folder of its own crates (src/bin) is not part of this one.
        files.retain(|f| !f.strip_prefix(src).is_ok_and(|r| r.starts_with("bin")));
        let modules: BTreeSet<Module> = files.iter().map(|f| module_of(src, f)).collect();
        let mut uses: BTreeMap<Module, BTreeMap<Module, String>> = BTreeMap::new();
        for file in &files {
            let here = module_of(src, file);
            let text = std::fs::read_to_string(file).expect("read a source file");
            let edges = uses.entry(here.clone()).or_default();
            let mut pending_use = String::new();
            // Brace depth of each inline module open (`mod tests {`).
            let mut inline: Vec<i64> = Vec::new();
            let mut depth: i64 = 0;
            for (i, line) in text.lines().enumerate() {
                let code = code(line);
                let trimmed = code.trim_start();
                let mut paths = Vec::new();
                let statement_start = trimmed
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub(super) ")
                    .trim_start_matches("pub ");
                if !pending_use.is_empty() || statement_start.starts_with("use ") {
                    pending_use.push_str(&code);
                    if let Some(end) = pending_use.find(';') {
                        let stmt = pending_use[..end].to_string();
                        let tree = stmt.split_once("use ").map_or("", |(_, t)| t).to_string();
                        paths.extend(expand_use(&tree));
                        pending_use.clear();
                    }
                } else {
                    paths.extend(paths_in(&code));
                }
                for p in paths {
                    if let Some(m) = resolve(&modules, &here, inline.len(), &p) {
                        if m != here {
                            let at = format!("{}:{}: {}", file.display(), i + 1, line.trim());
                            edges.entry(m).or_insert(at);
                        }
                    }
                }
                let is_inline_mod = {
                    let t = statement_start.trim_end();
                    t.starts_with("mod ") && t.ends_with('{')
                };
                for c in code.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if inline.last() == Some(&depth) {
                                inline.pop();
                            }
                        }
                        _ => {}
                    }
                }
                if is_inline_mod {
                    inline.push(depth - 1);
                }
            }
        }
        Graph { uses }
    }

    /// The circles: strongly connected sets of more than one module (their
    /// names, sorted), each with the uses that close it.
    pub fn circles(&self) -> Vec<(Vec<String>, Vec<String>)> {
        let nodes: Vec<&Module> = self.uses.keys().collect();
        let index: BTreeMap<&Module, usize> =
            nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
        let succ: Vec<Vec<usize>> = nodes
            .iter()
            .map(|m| {
                self.uses[*m]
                    .keys()
                    .filter_map(|t| index.get(t).copied())
                    .collect()
            })
            .collect();
        let mut out = Vec::new();
        for comp in strongly_connected(&succ) {
            if comp.len() < 2 {
                continue;
            }
            let set: BTreeSet<usize> = comp.iter().copied().collect();
            let mut lines = Vec::new();
            for &a in &comp {
                for (t, at) in &self.uses[nodes[a]] {
                    if index.get(t).is_some_and(|b| set.contains(b)) {
                        lines.push(format!("{} -> {}  ({at})", name(nodes[a]), name(t)));
                    }
                }
            }
            let mut members: Vec<String> = comp.iter().map(|&i| name(nodes[i])).collect();
            members.sort();
            out.push((members, lines));
        }
        out
    }
}

/// A module as `a::b` (`crate` for the root).
pub fn name(m: &Module) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

/// Tarjan's strongly connected components of the graph `succ`.
fn strongly_connected(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        succ: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &s.succ[v] {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().expect("a node on the stack");
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let n = succ.len();
    let mut s = State {
        succ,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}
