//! The committed artefacts generated from the contract, with their repo
//! paths: what `mosaic contract generate` writes and what [`drifted`]
//! compares with a checkout.

use super::agentcore::{agentcore_targets, splice_template, TEMPLATE_YAML};
use super::markdown::{http_api_md, splice_skill_md};
use super::{openapi, pretty, tools};
use serde_json::Value;
use std::path::Path;

/// The hand-written SKILL.md; only the part between the markers is generated.
const SKILL_PROSE: &str = include_str!("../../../skills/mosaic-hybrid-retrieval/SKILL.md");

/// Repo-relative paths of the generated artefacts.
pub const SKILL_MD: &str = "skills/mosaic-hybrid-retrieval/SKILL.md";
pub const HTTP_API_MD: &str = "skills/mosaic-hybrid-retrieval/references/http-api.md";
pub const AGENTCORE_JSON: &str = "skills/mosaic-hybrid-retrieval/references/agentcore-tools.json";
pub const OPENAPI_JSON: &str = "skills/mosaic-hybrid-retrieval/references/openapi.json";
/// One AgentCore Gateway `CreateGatewayTarget` request per function, with
/// `${GatewayId}` and `${<LogicalId>Arn}` placeholders for the deployment.
pub const AGENTCORE_TARGETS_JSON: &str =
    "skills/mosaic-hybrid-retrieval/references/agentcore-targets.json";

fn files(skill_prose: &str) -> Vec<(&'static str, String)> {
    let skill = splice_skill_md(skill_prose)
        .or_else(|| splice_skill_md(SKILL_PROSE))
        .expect("the committed SKILL.md holds the generated-operations markers");
    let agentcore = tools("agentcore").unwrap_or(Value::Null);
    vec![
        (SKILL_MD, skill),
        (HTTP_API_MD, http_api_md()),
        (AGENTCORE_JSON, pretty(&agentcore)),
        (OPENAPI_JSON, pretty(&openapi())),
        (AGENTCORE_TARGETS_JSON, pretty(&agentcore_targets())),
    ]
}

/// Every generated artefact: `(repo-relative path, content)`. SKILL.md keeps
/// its committed prose (as compiled in) around the generated table.
pub fn generated_files() -> Vec<(&'static str, String)> {
    files(SKILL_PROSE)
}

/// [`generated_files`] for the checkout at `root`: SKILL.md keeps the prose
/// it has on disk, so a stale build never overwrites newer prose.
pub fn generated_files_at(root: &Path) -> Vec<(&'static str, String)> {
    let prose = std::fs::read_to_string(root.join(SKILL_MD)).unwrap_or_default();
    let mut out = files(&prose);
    // The template's gateway targets, where the checkout has a template.
    if let Some(t) = std::fs::read_to_string(root.join(TEMPLATE_YAML))
        .ok()
        .and_then(|t| splice_template(&t))
    {
        out.push((TEMPLATE_YAML, t));
    }
    out
}

/// The generated files under `root` that are missing or differ from what
/// the contract produces (repo-relative paths; empty when all agree).
pub fn drifted(root: &Path) -> Vec<String> {
    generated_files_at(root)
        .into_iter()
        .filter(|(path, want)| {
            std::fs::read_to_string(root.join(path)).map_or(true, |have| have != *want)
        })
        .map(|(path, _)| path.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skill_prose_has_its_markers() {
        assert!(splice_skill_md(SKILL_PROSE).is_some());
        assert!(splice_skill_md("no markers").is_none());
        let once = splice_skill_md(SKILL_PROSE).unwrap();
        assert_eq!(
            splice_skill_md(&once).unwrap(),
            once,
            "splicing is idempotent"
        );
    }
}
