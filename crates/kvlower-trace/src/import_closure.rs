//! Every repository file that ran is in the digest (docs/conformance.md, "Every file that
//! ran is in the digest"): the repository-local import closure of the judged and judging
//! files, computed from their import statements ([`crate::py_imports`]), and the files the
//! recorder saw loaded, must all be listed in `source.files` or in the recorder's files.
//!
//! How a module name becomes a file, as Python's path finder does it for the roots a
//! campaign process searches: the file's own import root (the directory above its topmost
//! package: the first ancestor without `__init__.py`), the repository root, and (for an
//! absolute import) the file's own directory, `sys.path[0]` of a script run by its path. Per
//! component: a package (`name/__init__.py`) before a module (`name.py`) before a namespace
//! package (a directory). A first component found under neither root is not a repository
//! module (the standard library, an installed package). A later component not found, a
//! module used as a package, `from <package> import *`, a relative import leaving its
//! package, or a file that is not UTF-8: the campaign anchors nothing.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::CampaignProblem as P;
use crate::campaign_files::{CampaignFiles, FileId};
use crate::py_imports::{Import, imports};

/// Files followed at most (a campaign's closure is a handful).
const MAX_FILES: usize = 512;

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// What a module name loads: its files, and the package directory when its last component
/// is a package (where `from M import name` may find a submodule).
type Resolved = (Vec<String>, Option<String>);

/// (import root, the file's package components) of a repository-relative `.py` path.
fn root_of(path: &str, files: &dyn CampaignFiles) -> (String, Vec<String>) {
    let dirs: Vec<&str> = path.split('/').collect();
    let dirs = &dirs[..dirs.len().saturating_sub(1)];
    let mut i = dirs.len();
    while i > 0
        && files
            .identify(&join(&dirs[..i].join("/"), "__init__.py"))
            .is_some()
    {
        i -= 1;
    }
    (
        dirs[..i].join("/"),
        dirs[i..].iter().map(|d| (*d).to_owned()).collect(),
    )
}

/// What `parts` loads under `root`: `Ok(None)` when its first component is no repository
/// module there; `Ok(Some((files, package dir)))` otherwise (`package dir`: the last
/// component is a package, where `from M import name` may find a submodule).
fn resolve(
    path: &str,
    root: &str,
    parts: &[String],
    files: &dyn CampaignFiles,
) -> Result<Option<Resolved>, P> {
    let mut dir = root.to_owned();
    let mut loaded = Vec::new();
    for (n, part) in parts.iter().enumerate() {
        let last = n + 1 == parts.len();
        let d = join(&dir, part);
        let init = join(&d, "__init__.py");
        let module = format!("{d}.py");
        if files.identify(&init).is_some() {
            loaded.push(init);
        } else if files.identify(&module).is_some() {
            if !last {
                return Err(P::ModuleUsedAsPackage {
                    path: path.to_owned(),
                    name: parts.join("."),
                    module,
                });
            }
            loaded.push(module);
            return Ok(Some((loaded, None)));
        } else if !files.is_dir(&d) {
            if n == 0 {
                return Ok(None);
            }
            return Err(P::NoRepositoryModule {
                path: path.to_owned(),
                name: parts.join("."),
                root: if root.is_empty() { "." } else { root }.to_owned(),
            });
        }
        dir = d;
    }
    Ok(Some((loaded, Some(dir))))
}

/// The repository files one import statement of the file at `path` loads.
fn loads(path: &str, imp: &Import, files: &dyn CampaignFiles) -> Result<Vec<String>, P> {
    let (own_root, package) = root_of(path, files);
    let (roots, parts): (Vec<String>, Vec<String>) = if imp.level > 0 {
        let keep = package.len().checked_sub(imp.level - 1).ok_or_else(|| {
            P::RelativeImportLeavesPackage {
                path: path.to_owned(),
            }
        })?;
        let mut parts = package[..keep].to_vec();
        parts.extend(imp.module.iter().cloned());
        (vec![own_root], parts)
    } else {
        // The file's own directory too: a script run by its path has it as `sys.path[0]`,
        // so `import sibling` there loads `sibling.py` beside it (red-team pass: such an
        // import escaped the closure). A root more only asks more files into the digest.
        let own_dir = path.rsplit_once('/').map_or("", |(dir, _)| dir).to_owned();
        let mut roots = vec![own_root];
        for root in [String::new(), own_dir] {
            if !roots.contains(&root) {
                roots.push(root);
            }
        }
        (roots, imp.module.clone())
    };
    let mut out = Vec::new();
    for root in &roots {
        let found = if parts.is_empty() {
            // `from . import x` at the top of a root-level package: the package directory.
            Some((Vec::new(), Some(root.clone())))
        } else {
            resolve(path, root, &parts, files)?
        };
        let Some((loaded, package_dir)) = found else {
            continue;
        };
        out.extend(loaded);
        if !imp.from {
            continue;
        }
        if let Some(dir) = package_dir {
            if imp.star {
                return Err(P::StarImportOfPackage {
                    path: path.to_owned(),
                    module: parts.join("."),
                });
            }
            for name in &imp.names {
                let sub = join(&dir, name);
                let init = join(&sub, "__init__.py");
                let module = format!("{sub}.py");
                if files.identify(&init).is_some() {
                    out.push(init);
                } else if files.identify(&module).is_some() {
                    out.push(module);
                }
            }
        }
    }
    Ok(out)
}

/// Every file of the closure of `start` (judged and judging files) and every `loaded` file
/// is one of `allowed` (compared by file identity). `Err(why)` names the first that is not.
pub(crate) fn check_closure(
    allowed: &[&str],
    loaded: &[String],
    files: &dyn CampaignFiles,
) -> Result<(), P> {
    let mut ids: BTreeMap<FileId, &str> = BTreeMap::new();
    for path in allowed {
        if let Some(id) = files.identify(path) {
            ids.insert(id, path);
        }
    }
    let mut seen: BTreeSet<FileId> = BTreeSet::new();
    let mut queue: VecDeque<String> = allowed
        .iter()
        .filter(|p| p.ends_with(".py"))
        .map(|p| (*p).to_owned())
        .collect();
    while let Some(path) = queue.pop_front() {
        let Some(id) = files.identify(&path) else {
            return Err(P::ClosureFileUnreadable { path });
        };
        if !seen.insert(id) {
            continue;
        }
        if seen.len() > MAX_FILES {
            return Err(P::ClosureTooLarge);
        }
        let bytes = files
            .read(&path)
            .ok_or_else(|| P::ClosureFileUnreadable { path: path.clone() })?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| P::ClosureFileNotUtf8 { path: path.clone() })?;
        let statements = imports(text).map_err(|why| P::ImportsUnreadable {
            path: path.clone(),
            why,
        })?;
        for imp in &statements {
            for file in loads(&path, imp, files)? {
                let fid = files
                    .identify(&file)
                    .ok_or_else(|| P::ClosureFileUnreadable { path: file.clone() })?;
                if !ids.contains_key(&fid) {
                    return Err(P::ImportOutsideDigest {
                        path: path.clone(),
                        file,
                    });
                }
                queue.push_back(file);
            }
        }
    }
    for path in loaded {
        if !crate::campaign_files::relative(path) {
            return Err(P::LoadedNotRelative { path: path.clone() });
        }
        let in_digest = files.identify(path).is_some_and(|id| ids.contains_key(&id));
        if !in_digest {
            return Err(P::LoadedOutsideDigest { path: path.clone() });
        }
    }
    Ok(())
}
