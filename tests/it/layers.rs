//! The product library's modules are layers, and every import points down:
//!
//! ```text
//! {units, wire, platform} ← subagents ← engine ← {chain, dump, store} ← transport ← config
//! ```
//!
//! so the sans-IO core (the engine and the subagent model) never imports the shell, the
//! store or the config. The tools (crates/acp-proxy-tools: the Zed model, the dump tools, the
//! subcommands, the demo) are a crate of their own with layers of the same kind, built on the
//! library's public API; the library never imports them, so the product crate is the proxy
//! alone. The check reads every `crate::` path (and `super::` path) in each crate's sources,
//! outside comments and string literals, and fails on one that points up or sideways.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A crate's layers: each (a top-level module of its lib.rs) and the layers it may import.
type Layers = &'static [(&'static str, &'static [&'static str])];

/// The product library (crates/acp-proxy-core, sources in `src/`).
const LAYERS: Layers = &[
    ("units", &[]),
    ("wire", &[]),
    // What differs per operating system; it knows nothing of the proxy.
    ("platform", &[]),
    ("subagents", &["wire"]),
    ("engine", &["wire", "subagents"]),
    ("chain", &["wire"]),
    ("redact", &[]),
    ("dump", &["wire", "redact", "units", "platform"]),
    ("store", &["wire", "subagents", "units", "platform"]),
    (
        "transport",
        &[
            "wire",
            "subagents",
            "engine",
            "chain",
            "redact",
            "dump",
            "store",
            "platform",
        ],
    ),
    (
        "config",
        &[
            "units",
            "platform",
            "wire",
            "subagents",
            "engine",
            "dump",
            "store",
            "transport",
        ],
    ),
];

/// The tools crate (crates/acp-proxy-tools/src); the library is `acp_proxy::` to it, open to
/// all of them.
const TOOL_LAYERS: Layers = &[
    // What Zed does with frames, as a model: the dump checker, `doctor`, the demo and the
    // tests judge the proxy's output with it.
    ("zed_model", &[]),
    // The tools that read a dump replay it through the engine with the settings it recorded.
    ("dump_tools", &["zed_model"]),
    // The binary's own subcommands.
    ("cli", &["zed_model"]),
    // Tools for developing the proxy: nothing else uses them.
    ("devtools", &["zed_model"]),
];

/// Imports forbidden inside a layer: (importing module, imported module), as path prefixes.
const INNER: &[(&str, &str)] = &[
    // One model, several renderers: the model knows none of them.
    ("subagents::model", "subagents::render"),
    ("subagents::persist", "subagents::render"),
    ("subagents::render", "subagents::preset::detect"),
    // A child's life and the client's side are the engine's main flow: the mechanisms of
    // single agent families (`engine::quirks`) hook into it, never the other way round.
    ("engine::child", "engine::quirks"),
    ("engine::client", "engine::quirks"),
];

#[test]
fn every_import_points_down_the_layers() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut problems = check_crate(&manifest.join("src"), LAYERS);
    problems.extend(check_crate(
        &manifest.join("crates/acp-proxy-tools/src"),
        TOOL_LAYERS,
    ));
    assert!(
        problems.is_empty(),
        "imports against the layers (wire ← subagents ← engine ← {{chain, dump, store}} ← \
         transport ← config; in the tools zed_model ← {{dump_tools, cli, devtools}}):\n{}",
        problems.join("\n")
    );
}

/// The product library never imports the tools: not in its manifest, not in its sources.
#[test]
fn the_product_library_does_not_import_the_tools() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let core = std::fs::read_to_string(manifest.join("crates/acp-proxy-core/Cargo.toml"))
        .expect("read the library's manifest");
    let table: toml::Table = toml::from_str(&core).expect("the library's manifest parses");
    let deps: Vec<&String> = ["dependencies", "dev-dependencies", "build-dependencies"]
        .iter()
        .filter_map(|k| table.get(*k).and_then(toml::Value::as_table))
        .flat_map(|t| t.keys())
        .collect();
    assert!(
        deps.iter().any(|d| *d == "bytes"),
        "the check read the library's dependencies: {deps:?}"
    );
    assert!(
        !deps.iter().any(|d| d.starts_with("acp-proxy")),
        "the library depends on {deps:?}"
    );
    let lib = std::fs::read_to_string(manifest.join("src/lib.rs")).expect("read lib.rs");
    let tools = std::fs::read_to_string(manifest.join("crates/acp-proxy-tools/src/lib.rs"))
        .expect("read the tools' lib.rs");
    let mut files = Vec::new();
    rust_files(&manifest.join("src"), &mut files);
    let mut seen = 0;
    for file in files.iter().filter(|f| !f.ends_with("main.rs")) {
        let text = code_only(&std::fs::read_to_string(file).expect("read a source file"));
        seen += 1;
        assert!(
            !text.contains("acp_proxy_tools"),
            "{} imports the tools",
            file.display()
        );
    }
    assert!(seen > 50, "the check read the library's sources ({seen})");
    for (module, _) in TOOL_LAYERS {
        assert!(
            tools.contains(&format!("pub mod {module};")),
            "the tools crate holds `{module}`"
        );
        assert!(
            !code_only(&lib).contains(&format!("mod {module};")),
            "the library still holds `{module}`"
        );
    }
}

/// Every import in the crate whose sources are under `root` against its `layers`.
fn check_crate(root: &Path, layers: Layers) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut seen: BTreeMap<&str, usize> = layers.iter().map(|(l, _)| (*l, 0)).collect();
    let mut problems = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(root).expect("under the crate's root");
        let Some(module) = module_of(rel) else {
            continue;
        };
        if let Some(n) = module.first().and_then(|m| seen.get_mut(m.as_str())) {
            *n += 1;
        }
        let text = std::fs::read_to_string(file).expect("read a source file");
        for (line, target) in imports(&module, &text) {
            if let Some(why) = violation(layers, &module, &target) {
                problems.push(format!("{}:{line}: {why}", file.display()));
            }
        }
    }
    for (layer, n) in seen {
        assert!(
            n > 0,
            "no source file found for layer `{layer}` under {}: update the layers",
            root.display()
        );
    }
    problems
}

#[test]
fn the_check_finds_an_import_that_points_up() {
    let engine = vec!["engine".to_owned(), "route".to_owned()];
    let text = "// use crate::transport::relay; in a comment is fine\n\
                let s = \"crate::store in a string is fine\";\n\
                use crate::{wire::keys, config::Config};\n\
                fn f() { crate::transport::relay::run_stdio; }\n";
    let found: Vec<String> = imports(&engine, text)
        .filter_map(|(line, target)| {
            violation(LAYERS, &engine, &target).map(|v| format!("{line} {v}"))
        })
        .collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].starts_with("3 ") && found[0].contains("imports `config::Config`"),
        "{found:?}"
    );
    assert!(
        found[1].starts_with("4 ") && found[1].contains("imports `transport::relay"),
        "{found:?}"
    );
    let model = vec!["subagents".to_owned(), "model".to_owned()];
    let found: Vec<_> = imports(
        &model,
        "use super::render::zed;\nuse super::ids::ChildId;\n",
    )
    .filter_map(|(_, t)| violation(LAYERS, &model, &t))
    .collect();
    assert_eq!(found.len(), 1, "{found:?}");
}

/// The engine's whole API is one `impl Engine` in `engine/mod.rs`: the other files of the
/// engine add private methods only. And whether an agent line went on untouched is said in
/// one place, `engine/runs.rs`, which alone makes the actions that say it.
#[test]
fn the_engine_api_is_in_its_mod_rs_and_untouched_is_said_in_runs_rs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/engine");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut problems = Vec::new();
    let mut impls = 0;
    for file in &files {
        let rel = file.strip_prefix(&root).expect("under src/engine");
        let text = code_only(&std::fs::read_to_string(file).expect("read a source file"));
        let mut in_engine = false;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("impl Engine ") {
                in_engine = true;
                impls += 1;
            } else if line.starts_with('}') {
                in_engine = false;
            }
            let here = format!("src/engine/{}:{}", rel.display(), n + 1);
            if in_engine && line.trim_start().starts_with("pub fn ") && rel != Path::new("mod.rs") {
                problems.push(format!(
                    "{here}: a public method of Engine outside engine/mod.rs"
                ));
            }
            let says_untouched =
                line.contains("Action::Untouched(") || line.contains("Action::Read(");
            if says_untouched && rel != Path::new("runs.rs") && !rel.ends_with("tests.rs") {
                problems.push(format!(
                    "{here}: only engine/runs.rs says what became of a line"
                ));
            }
        }
    }
    assert!(
        impls > 10,
        "the check saw the engine's impl blocks ({impls})"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Renderers read the model and return what to send; only the engine writes it. No code in
/// `subagents/render/` takes a child mutably or reaches the registry of children (its unit
/// tests, which play the engine's part, aside).
#[test]
fn renderers_never_write_the_model() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/subagents/render");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() >= 3, "the check saw the renderers ({files:?})");
    let mut problems = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&root)
            .expect("under src/subagents/render");
        let text = code_only(&std::fs::read_to_string(file).expect("read a source file"));
        // The unit tests sit at the end of a file.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            let writes = writes_the_model(line);
            if let Some(what) = writes {
                problems.push(format!(
                    "src/subagents/render/{}:{}: {what}",
                    rel.display(),
                    n + 1
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What in one line of code would let a renderer write the model.
fn writes_the_model(line: &str) -> Option<&'static str> {
    let squeezed: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if squeezed.contains("&mut Child") || squeezed.contains("&mut crate::subagents::model::Child") {
        Some("a renderer takes a child mutably")
    } else if squeezed.contains("Children") || squeezed.contains("Children") {
        Some("a renderer reaches the registry of children")
    } else {
        None
    }
}

#[test]
fn the_model_check_finds_a_renderer_that_writes() {
    assert!(writes_the_model("fn child_step(&mut self, child: &mut  Child) {").is_some());
    assert!(writes_the_model("use crate::subagents::model::Children;").is_some());
    assert!(writes_the_model("fn child_step(&mut self, child: &Child) {").is_none());
}

/// `Render` is a card style (Zed's cards, the folded transcript); standard ACP subagents are
/// an output of their own, not a card style: `render/acp.rs` implements no `Render`, and the
/// trait carries none of the standard output's parts.
#[test]
fn the_standard_output_is_no_card_style() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/subagents/render");
    let read =
        |name: &str| code_only(&std::fs::read_to_string(root.join(name)).expect("read a renderer"));
    let acp = read("acp.rs");
    assert!(
        acp.contains("impl Acp"),
        "the check found the standard output"
    );
    assert!(
        !acp.contains("impl Render for") && !acp.contains("impl super::Render for"),
        "render/acp.rs implements Render"
    );
    let module = read("mod.rs");
    let start = module
        .find("pub trait Render")
        .expect("render/mod.rs declares Render");
    let body = &module[start..];
    let body = &body[..body.find("\n}").expect("the trait's end")];
    let methods: Vec<&str> = body
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("fn "))
        .map(|l| l.split('(').next().unwrap_or(""))
        .collect();
    assert!(methods.contains(&"card_update"), "{methods:?}");
    for part in [
        "announce",
        "sync",
        "child_line",
        "turn_ended",
        "reopened",
        "follows_children",
    ] {
        assert!(
            !methods.contains(&part),
            "Render has the standard output's `{part}`: {methods:?}"
        );
    }
}

/// A child's id is typed: `ChildId` does not stand in for a `&str` (no `Deref`), and the
/// registry looks children up by `&ChildId`; a session id's text becomes one only through
/// `Children::resolve` (or the store). A session on the agent's side is an `AgentSessionId`, one
/// the client knows (a top-level session, or a child's as the parent of its children's cards)
/// a `ClientSessionId`: the spawn site, the child and the store keep them apart.
#[test]
fn child_ids_are_typed() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/subagents");
    let read = |name: &str| code_only(&std::fs::read_to_string(src.join(name)).expect("read"));
    let ids = read("ids.rs");
    assert!(
        ids.contains("pub struct ChildId("),
        "the check found ChildId"
    );
    for id in ["ChildId", "AgentSessionId", "ClientSessionId"] {
        assert!(
            ids.contains(&format!("pub struct {id}(")),
            "the check found {id}"
        );
        assert!(
            !ids.contains(&format!("Deref for {id}")),
            "{id} derefs to its text: any string would do where one is asked for"
        );
    }
    let model = read("model.rs");
    for lookup in [
        "pub fn get(&self, id: &ChildId)",
        "pub fn get_mut(&mut self, id: &ChildId)",
        "pub fn contains(&self, id: &ChildId)",
        "pub fn remove(&mut self, id: &ChildId)",
    ] {
        assert!(model.contains(lookup), "the registry lacks `{lookup}`");
    }
    // The agent's own session id for a child is typed beside it.
    for typed in [
        "agent_child: Option<AgentSessionId>,",
        "by_agent_child: HashMap<AgentSessionId, ChildId>,",
    ] {
        assert!(model.contains(typed), "the model lacks `{typed}`");
    }
    // Where a child was spawned: the agent's session and the client's apart, in the spawn
    // site and in the child.
    for head in ["pub struct SpawnSite {", "pub struct Child {"] {
        let fields = struct_fields(&model, head);
        for typed in [
            "pub agent_session: AgentSessionId,",
            "pub parent: ClientSessionId,",
            "pub top_session: ClientSessionId,",
        ] {
            assert!(
                fields.iter().any(|f| f == typed),
                "`{head}` lacks `{typed}`: {fields:?}"
            );
        }
    }
    // What the store files a child under is the client's session.
    let persist = read("persist.rs");
    assert!(
        persist.contains("parent_session_id: ClientSessionId,"),
        "the store's parent session id is untyped"
    );
}

/// The children in memory have one owner, `Children`, whose fields are private: a child and
/// the lookups that lead to it change together, through its methods. A child's life and its
/// card are one value (`Life`, with its cancel request) that changes only through the child's
/// transitions; what lies beside it (how it runs, whether the client has it loaded, its stop
/// route, its prompt, its history during a reopen, whether it is modelled) is private too.
#[test]
fn the_children_have_one_owner_and_cards_change_by_transitions() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/subagents/model.rs");
    let model = code_only(&std::fs::read_to_string(path).expect("read the model"));
    let children = struct_fields(&model, "pub struct Children {");
    assert!(
        children.iter().any(|f| f.starts_with("children:")),
        "the check read the struct: {children:?}"
    );
    let public: Vec<&String> = children.iter().filter(|f| f.starts_with("pub")).collect();
    assert!(public.is_empty(), "public fields of Children: {public:?}");
    let child = struct_fields(&model, "pub struct Child {");
    for private in [
        "life: Life,",
        "progress: Progress,",
        "view: View,",
        "stop_route: StopRoute,",
        "prompt: Prompt,",
        "run: Run,",
        "history: History,",
        "tracking: Tracking,",
    ] {
        assert!(
            child.iter().any(|f| f == private),
            "Child's `{private}` is not a private field: {child:?}"
        );
    }
    // The life and the card are one value: no field of their own beside it.
    for gone in ["ChildState", "Card", "Cancel"] {
        assert!(
            !child.iter().any(|f| f.ends_with(&format!(": {gone},"))),
            "Child keeps a `{gone}` beside its life: {child:?}"
        );
    }
    // The life's variants are private to its module: only its transitions change it.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/subagents/life.rs");
    let life = code_only(&std::fs::read_to_string(path).expect("read the lifecycle"));
    assert!(
        life.contains("pub(super) enum Life {"),
        "the check found the lifecycle"
    );
    let open = struct_fields(&life, "pub(super) struct Open {");
    let public: Vec<&String> = open.iter().filter(|f| f.starts_with("pub")).collect();
    assert!(
        public.is_empty(),
        "public fields of an open card: {public:?}"
    );
}

/// The field lines of the struct declared by `head` in `code`.
fn struct_fields(code: &str, head: &str) -> Vec<String> {
    let start = code
        .find(head)
        .unwrap_or_else(|| panic!("`{head}` declared"));
    let body = &code[start..];
    let body = &body[..body.find("\n}").expect("the struct's end")];
    body.lines()
        .skip(1)
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read a source directory")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file under `src/` holds (`engine/mod.rs` → `engine`, `engine/route.rs` →
/// `engine::route`); `None` for the crate roots.
fn module_of(rel: &Path) -> Option<Vec<String>> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    match last.strip_suffix(".rs")? {
        "mod" => {}
        "lib" | "main" if parts.is_empty() => return None,
        name => parts.push(name.to_owned()),
    }
    Some(parts)
}

/// Why `module` may not import `target`, if it may not.
fn violation(layers: Layers, module: &[String], target: &[String]) -> Option<String> {
    let from = module.first()?;
    let to = target.first()?;
    let allowed = layers.iter().find(|(l, _)| l == from)?.1;
    if to != from && layers.iter().any(|(l, _)| l == to) && !allowed.contains(&to.as_str()) {
        return Some(format!(
            "`{}` imports `{}`: layer `{from}` may import only {allowed:?}",
            module.join("::"),
            target.join("::")
        ));
    }
    let (m, t) = (module.join("::"), target.join("::"));
    INNER
        .iter()
        .find(|(a, b)| under(&m, a) && under(&t, b))
        .map(|(a, b)| format!("`{m}` imports `{t}`: `{a}` may not import `{b}`"))
}

fn under(path: &str, prefix: &str) -> bool {
    path == prefix || path.starts_with(&format!("{prefix}::"))
}

/// Every `crate::` and `super::` path in `text` (code only), resolved from `module`, with its
/// line number. `super` is taken from the file's module (inside an inline `mod tests` it is
/// one level too high, which only ever names a module of the same layer).
fn imports<'a>(
    module: &'a [String],
    text: &'a str,
) -> impl Iterator<Item = (usize, Vec<String>)> + 'a {
    let code = code_only(text);
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let start_ok = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
            let rest = &line[i..];
            let (base, len) = if start_ok && rest.starts_with("crate::") {
                (Vec::new(), "crate::".len())
            } else if start_ok && rest.starts_with("super::") {
                let mut base = module.to_vec();
                let mut len = 0;
                while line[i + len..].starts_with("super::") {
                    base.pop();
                    len += "super::".len();
                }
                (base, len)
            } else {
                i += 1;
                continue;
            };
            let after = &line[i + len..];
            for tail in path_tails(after) {
                let mut target = base.clone();
                target.extend(tail);
                found.push((n + 1, target));
            }
            i += len;
        }
    }
    found.into_iter()
}

/// The module paths right after `crate::`: `a::b::C`, or each entry of `{a::b, c}`.
fn path_tails(after: &str) -> Vec<Vec<String>> {
    if let Some(group) = after.strip_prefix('{') {
        let mut depth = 0;
        let mut entries = vec![String::new()];
        for c in group.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => entries.push(String::new()),
                _ => {}
            }
            if let Some(e) = entries.last_mut() {
                if depth == 0 && c != ',' {
                    e.push(c);
                }
            }
        }
        return entries.iter().map(|e| segments(e.trim())).collect();
    }
    vec![segments(after)]
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(|s| {
            s.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .take_while(|s| !s.is_empty())
        .collect()
}

/// `text` with comments and the insides of string and char literals blanked out (line breaks
/// kept, so line numbers stay).
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    while i < c.len() {
        let ident_before = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (!ident_before || byte_prefix(&c, i))
            && matches!(c.get(i + 1), Some('"') | Some('#'))
            && raw_string_start(&c, i + 1).is_some()
        {
            let (hashes, body) = raw_string_start(&c, i + 1).unwrap_or((0, i + 2));
            i = body;
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(c[i]));
                i += 1;
            }
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            i += 1;
        } else if c[i] == '\'' && (c.get(i + 1) == Some(&'\\') || c.get(i + 2) == Some(&'\'')) {
            // A char literal ('x', '\n'); a lifetime has no closing quote.
            i += 1;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Whether the `r` at `i` follows the `b` of a raw byte string (`br"…"`).
fn byte_prefix(c: &[char], i: usize) -> bool {
    i >= 1 && c[i - 1] == 'b' && (i < 2 || !(c[i - 2].is_alphanumeric() || c[i - 2] == '_'))
}

/// For `r#"…"#` starting at the `#` or `"` at `at`: (number of hashes, index after the quote).
fn raw_string_start(c: &[char], at: usize) -> Option<(usize, usize)> {
    let mut i = at;
    while c.get(i) == Some(&'#') {
        i += 1;
    }
    (c.get(i) == Some(&'"')).then_some((i - at, i + 1))
}
