//! The skill host calls of an execution: `saveSkill` and `loadSkills`, file work in the
//! execution's workspace done off the runtime's threads, within the bounds of what one
//! execution may load.

use std::sync::Arc;

use serde_json::Value;

use crate::sandbox::proto::{HostRequest, Language};
use crate::sandbox::typescript;
use crate::workspace::{Space, skills};

/// Most skills one execution loads (the ones it imports and theirs).
const MAX_SKILLS_LOADED: usize = 64;
/// Most bytes of skill code one `loadSkills` answer carries.
const MAX_SKILL_BYTES_LOADED: usize = 2 * 1024 * 1024;

/// Saves or loads skills in the execution's workspace (file work off the runtime's threads).
pub(super) async fn skill_call(
    space: Result<Arc<Space>, String>,
    request: HostRequest,
) -> Result<Value, String> {
    let space = space?;
    let work = move || match request {
        HostRequest::SaveSkill {
            name,
            code,
            description,
            language,
        } => skills::save(&space, &name, language, &code, &description).map(|meta| {
            serde_json::json!({
                "name": meta.name,
                "language": meta.language,
                "import": meta.module(),
                "usage": meta.import_line(),
                "exports": meta.exports,
                "size": meta.size,
            })
        }),
        HostRequest::LoadSkills { names, language } => {
            if names.len() > MAX_SKILLS_LOADED {
                return Err(skills::SkillError::Refused(format!(
                    "an execution may import at most {MAX_SKILLS_LOADED} skills (with the skills they import); this one asked for {}",
                    names.len()
                )));
            }
            // Per name: a skill that cannot be loaded fails only the import that names it.
            let mut loaded = Vec::new();
            let mut errors = serde_json::Map::new();
            let mut bytes = 0;
            for name in names {
                match skills::load(&space, std::slice::from_ref(&name), language) {
                    Ok(found) if bytes + found[0].code.len() > MAX_SKILL_BYTES_LOADED => {
                        errors.insert(name, format!("the skills this execution imports pass {MAX_SKILL_BYTES_LOADED} bytes together; import fewer").into());
                    }
                    Ok(mut found) => {
                        bytes += found[0].code.len();
                        loaded.append(&mut found);
                    }
                    Err(e) => {
                        errors.insert(name, e.to_string().into());
                    }
                }
            }
            // A TypeScript skill comes with its JavaScript, for the lanes' contexts.
            let skills: Vec<Value> = loaded
                .into_iter()
                .map(|skill| {
                    let js = (skill.language == Language::Typescript)
                        .then(|| typescript::module_javascript(&skill.code))
                        .flatten();
                    serde_json::json!({"name": skill.name, "language": skill.language, "code": skill.code, "js": js.as_deref()})
                })
                .collect();
            Ok(serde_json::json!({"skills": skills, "errors": errors}))
        }
        _ => Err(skills::SkillError::Refused("not a skill call".into())),
    };
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("skills: {e}"))?
        .map_err(|e| e.to_string())
}
