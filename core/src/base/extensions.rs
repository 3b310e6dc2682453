//! Blocks a plugin computes itself and hands to the core for the output
//! (`CoreApi::extension`): a JSON document under profile.json's `extensions`, and
//! lines for the summary. The Kokkos tuner's results come this way; the plugin
//! writes no file.

use std::sync::Mutex;

/// One block: its name, its JSON and its summary lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Extension {
    /// Key under `extensions`.
    pub name: String,
    /// The document.
    pub json: serde_json::Value,
    /// Lines for the summary (may be empty).
    pub summary: String,
}

static BLOCKS: Mutex<Vec<Extension>> = Mutex::new(Vec::new());

/// Adds (or replaces, by name) a block; false when `json` does not parse.
pub fn add(name: &str, json: &str, summary: &str) -> bool {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(json) else {
        return false;
    };
    let mut blocks = BLOCKS.lock().unwrap_or_else(|p| p.into_inner());
    blocks.retain(|b| b.name != name);
    blocks.push(Extension {
        name: name.to_string(),
        json,
        summary: summary.to_string(),
    });
    true
}

/// Every block, in arrival order.
pub fn all() -> Vec<Extension> {
    BLOCKS.lock().map(|b| b.clone()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_parse_and_replace() {
        assert!(!add("bad", "{not json", ""));
        assert!(add("tuning", "{\"a\": 1}", "line\n"));
        assert!(add("tuning", "{\"a\": 2}", ""));
        let b: Vec<_> = all().into_iter().filter(|b| b.name == "tuning").collect();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].json["a"], 2);
        assert!(all().iter().all(|b| b.name != "bad"));
    }
}
