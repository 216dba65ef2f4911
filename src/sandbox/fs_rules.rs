//! The part of the filesystem a Deno process of the sandbox may reach, enforced by the kernel
//! (Landlock) below Deno's own permissions: [`FsGrants`] says what one process may read,
//! execute and write; [`FsGrants::ruleset`] turns it into a Landlock ruleset that `jail` applies
//! between fork and exec. Native code inside Deno (WebGPU's graphics drivers, say) runs outside
//! Deno's permission checks; this layer holds for it too.
//!
//! Everything not granted is refused: other files, every device but `/dev/null` and
//! `/dev/urandom`, creating or removing files, TCP (Landlock's network rights, where the kernel
//! has them), signals to processes outside the worker and abstract unix sockets outside it
//! (Landlock's scopes, where the kernel has them). Only the system libraries the Deno binary
//! itself links are readable, read from its ELF headers, so a graphics driver it would load at
//! run time cannot be.
//!
//! On kernels without Landlock (before 5.13, or with it disabled) the rules cannot be applied;
//! [`support`] says so, and the settings decide whether workers still start (see
//! `require_landlock`).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use landlock::{
    ABI, Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
    RulesetCreatedAttr, Scope,
};

/// The newest Landlock ABI whose rights the rules ask for (filesystem rights of ABI 5,
/// network rights of ABI 4, scopes of ABI 6); older kernels enforce what they have.
const TARGET_ABI: ABI = ABI::V6;

/// Small system files every Deno process reads: the dynamic loader's cache, the local time
/// zone, entropy, and the kernel's memory and CPU counts (V8 and tokio size themselves by them).
const SYSTEM_READS: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/usr/share/zoneinfo",
    "/dev/urandom",
    "/proc/meminfo",
    "/sys/devices/system/cpu",
];

/// Where the dynamic loader looks for the libraries a binary names (the loader's own default
/// paths on Debian-like and other glibc systems, for x86-64 and arm64).
const LIBRARY_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// What one jailed process may reach.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FsGrants {
    /// Programs it may execute and read: the Deno binary (the loader and the libraries it
    /// links are added by [`FsGrants::ruleset`]).
    pub executables: Vec<PathBuf>,
    /// Files and directory trees it may read.
    pub reads: Vec<PathBuf>,
    /// Existing files it may read, write and truncate, but not create, rename or remove.
    pub writable_files: Vec<PathBuf>,
    /// Directory trees it may read, create regular files and directories in, write, rename
    /// within and remove from (no devices, sockets, pipes or links).
    pub writable_trees: Vec<PathBuf>,
}

/// What this kernel's Landlock offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// The kernel's Landlock ABI version; 0 when it has none.
    pub abi: i32,
}

impl Support {
    pub fn available(self) -> bool {
        self.abi >= 1
    }

    /// One line for `health` and `doctor`.
    pub fn describe(self) -> String {
        match self.abi {
            n if n < 1 => "unavailable: workers are confined by Deno's permissions, seccomp and \
                           resource limits only"
                .to_string(),
            n if n < 4 => format!("ABI {n}: files confined; TCP, signals and abstract sockets not"),
            n if n < 6 => {
                format!("ABI {n}: files and TCP confined; signals and abstract sockets not")
            }
            n => format!("ABI {n}: files, TCP, signals and abstract unix sockets confined"),
        }
    }
}

/// The kernel's Landlock support (asked once).
pub fn support() -> Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    *SUPPORT.get_or_init(|| Support {
        abi: super::jail::landlock_abi(),
    })
}

impl FsGrants {
    /// The Landlock ruleset for these grants, ready for `jail` to apply. Paths that do not
    /// exist are left out (nothing can be reached through them). On a kernel without Landlock
    /// the ruleset is empty and applying it changes nothing.
    pub(crate) fn ruleset(&self) -> io::Result<RulesetCreated> {
        let abi = TARGET_ABI;
        let read_file = AccessFs::ReadFile;
        let read_tree = AccessFs::ReadFile | AccessFs::ReadDir;
        let run = AccessFs::ReadFile | AccessFs::Execute;
        let write_file = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate;
        let write_tree = read_tree
            | AccessFs::WriteFile
            | AccessFs::Truncate
            | AccessFs::MakeReg
            | AccessFs::MakeDir
            | AccessFs::RemoveFile
            | AccessFs::RemoveDir;

        let mut rules: Vec<(PathBuf, landlock::BitFlags<AccessFs>)> = Vec::new();
        for program in &self.executables {
            rules.push((program.clone(), run));
            for library in linked_libraries(program).iter() {
                rules.push((library.clone(), run));
            }
        }
        rules.extend(SYSTEM_READS.iter().map(|p| (PathBuf::from(p), read_tree)));
        rules.push(("/dev/null".into(), read_file | AccessFs::WriteFile));
        rules.extend(self.reads.iter().map(|p| (p.clone(), read_tree)));
        rules.extend(self.writable_files.iter().map(|p| (p.clone(), write_file)));
        rules.extend(self.writable_trees.iter().map(|p| (p.clone(), write_tree)));

        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .and_then(|r| r.handle_access(AccessNet::from_all(abi)))
            .and_then(|r| r.scope(Scope::from_all(abi)))
            .and_then(|r| r.create())
            .map_err(io::Error::other)?;
        for (path, access) in rules {
            let Ok(fd) = PathFd::new(&path) else {
                continue;
            };
            // A file takes only the rights that apply to files.
            let access = if path.is_dir() {
                access
            } else {
                access & AccessFs::from_file(abi)
            };
            ruleset = ruleset
                .add_rule(PathBeneath::new(fd, access))
                .map_err(io::Error::other)?;
        }
        Ok(ruleset)
    }
}

/// The dynamic loader and every shared library `program` links, directly or through another
/// library, as found in the loader's default directories (read once per program).
fn linked_libraries(program: &Path) -> Arc<Vec<PathBuf>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Arc<Vec<PathBuf>>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(found) = cache.lock().expect("library cache lock").get(program) {
        return found.clone();
    }
    let found = Arc::new(resolve_libraries(program));
    cache
        .lock()
        .expect("library cache lock")
        .insert(program.to_path_buf(), found.clone());
    found
}

fn resolve_libraries(program: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let mut queue = vec![program.to_path_buf()];
    while let Some(binary) = queue.pop() {
        let Ok(links) = elf_links(&binary) else {
            tracing::warn!(binary = %binary.display(), "cannot read the libraries a binary links");
            continue;
        };
        let interpreter = links.interpreter.map(PathBuf::from);
        let libraries = links.needed.iter().filter_map(|name| find_library(name));
        for path in interpreter.into_iter().chain(libraries) {
            if !found.contains(&path) {
                found.push(path.clone());
                queue.push(path);
            }
        }
    }
    found
}

fn find_library(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    LIBRARY_DIRS
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|path| path.is_file())
}

/// What an ELF binary asks the loader for.
#[derive(Debug, Default)]
struct ElfLinks {
    interpreter: Option<String>,
    needed: Vec<String>,
}

fn elf_links(binary: &Path) -> Result<ElfLinks, Box<dyn std::error::Error>> {
    use object::read::elf::ProgramHeader as _;
    use object::{Object as _, ReadCache};

    let file = std::fs::File::open(binary)?;
    let data = ReadCache::new(file);
    let elf = object::File::parse(&data)?;
    let mut links = ElfLinks::default();
    for library in elf.import_libraries()? {
        links
            .needed
            .push(String::from_utf8_lossy(library?.name()).into_owned());
    }
    if let object::File::Elf64(elf64) = &elf {
        let endian = elf64.endian();
        for header in elf64.elf_program_headers() {
            if let Some(path) = header.interpreter(endian, &data)? {
                links.interpreter = Some(String::from_utf8_lossy(path).into_owned());
            }
        }
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_libraries_of_a_dynamic_binary_are_found_with_its_loader() {
        // The test binary itself is a dynamically linked glibc program.
        let me = std::env::current_exe().unwrap();
        let libraries = resolve_libraries(&me);
        let names: Vec<String> = libraries
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().any(|n| n.starts_with("libc.so")), "{names:?}");
        assert!(names.iter().any(|n| n.starts_with("ld-linux")), "{names:?}");
        assert!(libraries.iter().all(|p| p.is_file()), "{libraries:?}");
    }

    #[test]
    fn missing_paths_are_left_out_of_the_ruleset() {
        let grants = FsGrants {
            reads: vec!["/definitely/not/here".into()],
            ..FsGrants::default()
        };
        assert!(grants.ruleset().is_ok());
    }

    #[test]
    fn support_reads_as_a_sentence() {
        assert!(Support { abi: 0 }.describe().starts_with("unavailable"));
        assert!(Support { abi: 6 }.describe().contains("signals"));
    }
}
