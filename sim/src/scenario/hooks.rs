//! The checked lifecycle: each `[[lifecycle]]` entry, whether it names a
//! kind of the built-in library (`hook = "..."`) or a registered hook
//! (`use = "..."`), checked by the one registry into a hook with the name
//! the event log shows.

use std::fmt;

use pai_runtime::hook::Phase;

use super::field::{CheckError, Segment, fail};
use super::spec::LifecycleEntry;
use crate::hooks::{BuildContext, HookSpec, Maker, SimHook, UserHookDef};
use crate::registry::{Checked, Registry};

/// One hook of the lifecycle, with the name the event log shows.
#[derive(Clone)]
pub struct HookDef {
    /// The hook's name in the event log: the entry's `name`, or
    /// `<hook>#<index>` when it gives none.
    pub name: String,
    /// The built-in hook or the registered one.
    pub source: HookSource,
    /// Builds the hook: the registry's maker, for either source.
    make: Maker,
}

/// Where a hook of the lifecycle comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum HookSource {
    /// The built-in library, whose hooks the oracles know.
    Library(HookSpec),
    /// A hook a harness registered: the oracles know only the phases it
    /// handles, never what it decides.
    User(UserHookDef),
}

impl HookDef {
    /// The library hook, if it is one.
    pub fn library(&self) -> Option<&HookSpec> {
        match &self.source {
            HookSource::Library(h) => Some(h),
            HookSource::User(_) => None,
        }
    }

    /// Whether the hook handles `phase` (a library hook handles one).
    pub fn handles(&self, phase: Phase) -> bool {
        match &self.source {
            HookSource::Library(h) => h.phase() == phase,
            HookSource::User(u) => u.handles(phase),
        }
    }

    /// Whether the hook is a registered one, whose decisions no oracle
    /// can foresee.
    pub fn is_user(&self) -> bool {
        matches!(self.source, HookSource::User(_))
    }

    /// The hook, built with what the world lends it (`context`: where it
    /// records what it sends its own models, who deals their answers).
    pub fn build(&self, context: &BuildContext) -> SimHook {
        (self.make)(&self.name, context)
    }
}

impl fmt::Debug for HookDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookDef")
            .field("name", &self.name)
            .field("source", &self.source)
            .finish()
    }
}

impl PartialEq for HookDef {
    fn eq(&self, other: &HookDef) -> bool {
        (&self.name, &self.source) == (&other.name, &other.source)
    }
}

/// Hooks, named as the event log shows them, each checked by `registry`:
/// a library kind by the library's own checks (however the entry names
/// it), a registered hook's configuration read by its type.
pub(super) fn hooks(
    entries: Vec<LifecycleEntry>,
    registry: &Registry,
) -> Result<Vec<HookDef>, CheckError> {
    let mut out = Vec::with_capacity(entries.len());
    for (i, entry) in entries.into_iter().enumerate() {
        let at = |field: &'static str| {
            [
                Segment::Key("lifecycle"),
                Segment::Index(i),
                Segment::Key(field),
            ]
        };
        let (kind, given, config, head) = match entry {
            LifecycleEntry::Library(spec) => {
                let config = match spec.config() {
                    Ok(config) => config,
                    Err(message) => return fail(&at("hook"), message),
                };
                let given = spec.given_name().map(str::to_string);
                (spec.kind().to_string(), given, config, "hook")
            }
            LifecycleEntry::User(u) => (u.use_, u.name, u.config, "use"),
        };
        let (source, make) = match registry.check(&kind, given.as_deref(), &config) {
            Ok(Checked::Foreseen(spec, make)) => (HookSource::Library(spec), make),
            Ok(Checked::Unforeseen(def)) => {
                let make = def.make.clone();
                (HookSource::User(def), make)
            }
            Err(r) => {
                let mut at = at(head).to_vec();
                if let Some(field) = r.field {
                    at[2] = Segment::Name(field);
                }
                return fail(&at, r.message);
            }
        };
        let name = given.unwrap_or_else(|| format!("{kind}#{i}"));
        out.push(HookDef { name, source, make });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use pai_runtime::hook::Phases;

    use crate::scenario::Scenario;

    /// The oracles take a library hook's phase from its spec; the hook the
    /// registry builds handles that phase, and no other but compaction's
    /// (the runtime's helper also takes part in `prepare_history_rewrite`,
    /// which the spec does not declare), for every library hook of the suite.
    #[test]
    fn a_library_hook_built_through_the_registry_handles_its_specs_phase() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let files = crate::suite::discover(&[root]).expect("the suite is readable");
        let mut more = BTreeSet::new();
        let mut seen = 0;
        for f in &files {
            let scenario = Scenario::load(f).expect("the suite loads");
            for hook in &scenario.hooks {
                let Some(spec) = hook.library() else { continue };
                let built = hook.build(&Default::default()).phases();
                assert!(built.contains(spec.phase()), "{}", hook.name);
                if built != Phases::only(spec.phase()) {
                    more.insert(spec.kind());
                }
                seen += 1;
            }
        }
        assert!(seen > 100, "{seen}");
        assert_eq!(more, BTreeSet::from(["compaction"]));
    }
}
