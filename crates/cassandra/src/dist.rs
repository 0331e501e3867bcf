//! Cassandra's classpath: the server jar and its runtime dependencies, copied from Maven
//! Central by Maven (`java/cassandra-runtime/pom.xml`) into a cache directory on first use and
//! reused afterwards (`~/.m2` keeps the downloads too). Also the one way the project's own
//! Java programs are built on first use ([`built_on_first_use`]): the plug-in for Cassandra
//! and the Java driver's runner of the load generator.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The pom that names Cassandra's version and fetches its jars.
pub fn pom_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../java/cassandra-runtime/pom.xml")
}

/// The Cassandra version the pom pins (`<cassandra.version>`).
pub fn version() -> Result<String, String> {
    let pom = pom_path();
    let text = std::fs::read_to_string(&pom).map_err(|e| format!("cannot read {}: {e}", pom.display()))?;
    let start = text
        .find("<cassandra.version>")
        .ok_or_else(|| format!("{} has no <cassandra.version>", pom.display()))?
        + "<cassandra.version>".len();
    let end = text[start..]
        .find('<')
        .ok_or_else(|| format!("{}: <cassandra.version> is not closed", pom.display()))?;
    Ok(text[start..start + end].trim().to_string())
}

/// The project's cache directory: `$XDG_CACHE_HOME/replica-lb` or `~/.cache/replica-lb`.
pub fn cache_base() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("replica-lb")
}

/// The cache directory for `version`: `$XDG_CACHE_HOME/replica-lb/cassandra-VERSION` or
/// `~/.cache/replica-lb/cassandra-VERSION`.
pub fn cache_dir(version: &str) -> PathBuf {
    cache_base().join(format!("cassandra-{version}"))
}

/// The directory holding every jar of Cassandra's classpath, fetched with Maven if it is not
/// cached yet (a marker file is written only after a complete copy). `progress` hears what
/// happens.
pub fn classpath_dir(progress: &mut dyn FnMut(&str)) -> Result<PathBuf, String> {
    let version = version()?;
    let dir = cache_dir(&version);
    let lib = dir.join("lib");
    let marker = dir.join("complete");
    if marker.exists() {
        return Ok(lib);
    }
    progress(&format!(
        "fetching Apache Cassandra {version} and its dependencies with Maven (first use; cached in {})",
        dir.display()
    ));
    let _ = std::fs::remove_dir_all(&lib);
    std::fs::create_dir_all(&lib).map_err(|e| format!("cannot create {}: {e}", lib.display()))?;
    let mut mvn = Command::new("mvn");
    mvn.args(["-B", "-q", "-f"])
        .arg(pom_path())
        .arg("dependency:copy-dependencies")
        .arg(format!("-DoutputDirectory={}", lib.display()));
    run_maven(mvn, &format!("fetch Cassandra {version}"))?;
    let jar = lib.join(format!("cassandra-all-{version}.jar"));
    if !jar.exists() {
        return Err(format!("mvn finished but {} is missing", jar.display()));
    }
    std::fs::write(&marker, b"").map_err(|e| format!("cannot write {}: {e}", marker.display()))?;
    Ok(lib)
}

/// Runs a Maven command to completion; on failure, one line naming `what` it was to do and
/// Maven's first ERROR line.
pub(crate) fn run_maven(mut mvn: Command, what: &str) -> Result<(), String> {
    let out = mvn
        .output()
        .map_err(|e| format!("cannot run mvn (Maven is needed to {what}): {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    let line = text
        .lines()
        .find(|l| l.contains("ERROR"))
        .unwrap_or("no error line")
        .trim()
        .to_string();
    Err(format!("mvn could not {what}: {line}"))
}

/// A Maven project of the repository that is built on first use and after its sources change.
#[derive(Clone, Debug)]
pub struct MavenProject<'a> {
    /// What it is, for messages ("the replica-lb plug-in for Cassandra").
    pub what: &'a str,
    /// Its directory (with `pom.xml` and `src/main`).
    pub dir: PathBuf,
    /// Its artifactId: the built jar is `target/ARTIFACT-*.jar`, cached as `ARTIFACT.jar`.
    pub artifact: &'a str,
    /// The cache: a directory per hash of the sources, holding `ARTIFACT.jar` (and `lib/`).
    pub cache: PathBuf,
    /// Whether its runtime dependencies are copied too, into `lib/` beside the jar (for a
    /// program started with `java -cp JAR:LIB/*`; a plug-in gets its own from its host).
    pub dependencies: bool,
}

/// A built project, from the cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Built {
    /// Its jar.
    pub jar: PathBuf,
    /// The directory of its runtime dependencies' jars (when asked for).
    pub lib: Option<PathBuf>,
}

/// A hash of a project's sources (pom and src/main), so an edited project is rebuilt.
pub fn sources_hash(project: &Path) -> Result<String, String> {
    sources_hash_of(&[project])
}

/// A hash of the sources (pom and src/main) of several projects together: a project and the
/// ones it is built with ([`built_on_first_use_after`]), so editing any of them rebuilds it.
/// For one project it is [`sources_hash`].
pub fn sources_hash_of(projects: &[&Path]) -> Result<String, String> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        for e in entries {
            let p = e.map_err(|e| e.to_string())?.path();
            if p.is_dir() {
                walk(&p, files)?;
            } else {
                files.push(p);
            }
        }
        Ok(())
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, project) in projects.iter().enumerate() {
        let mut files = vec![project.join("pom.xml")];
        walk(&project.join("src/main"), &mut files)?;
        files.sort();
        // The later projects' names carry their position, so moving a file between two
        // projects changes the hash.
        let tag = if i == 0 { Vec::new() } else { format!("{i}/").into_bytes() };
        for f in &files {
            let rel = f.strip_prefix(project).unwrap_or(f);
            let bytes = std::fs::read(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?;
            for b in tag.iter().chain(rel.as_os_str().as_encoded_bytes()).chain(&[0u8]).chain(&bytes) {
                h ^= u64::from(*b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    Ok(format!("{h:016x}"))
}

/// `project` built with Maven (`package`, tests skipped; with its dependencies, the dependency
/// plugin's `copy-dependencies` too) on first use and after its sources change, cached by a
/// hash of its sources: a build is copied into a directory of its own and renamed into place
/// whole, so the cache never holds half a build. `progress` hears what happens.
pub fn built_on_first_use(project: &MavenProject<'_>, progress: &mut dyn FnMut(&str)) -> Result<Built, String> {
    built_on_first_use_after(project, &[], progress)
}

/// [`built_on_first_use`] for a project that depends on other Maven projects of the repository
/// (`required`, e.g. `java/core`): they are built and installed into the local Maven repository
/// (`mvn install`, tests skipped) before it, and the cache key covers their sources too
/// ([`sources_hash_of`]), so an edit to any of them rebuilds the project.
pub fn built_on_first_use_after(project: &MavenProject<'_>, required: &[&Path], progress: &mut dyn FnMut(&str)) -> Result<Built, String> {
    let pom = project.dir.join("pom.xml");
    if !pom.exists() {
        return Err(format!("the sources of {} are missing: {}", project.what, project.dir.display()));
    }
    for dir in required {
        if !dir.join("pom.xml").exists() {
            return Err(format!("the sources {} needs are missing: {}", project.what, dir.display()));
        }
    }
    let mut projects = vec![project.dir.as_path()];
    projects.extend_from_slice(required);
    let dir = project.cache.join(sources_hash_of(&projects)?);
    let jar_name = format!("{}.jar", project.artifact);
    let built = |dir: &Path| Built {
        jar: dir.join(&jar_name),
        lib: project.dependencies.then(|| dir.join("lib")),
    };
    if dir.join(&jar_name).exists() {
        return Ok(built(&dir));
    }
    for required in required {
        progress(&format!(
            "installing {} with Maven, which {} needs",
            required.display(),
            project.what
        ));
        let mut mvn = Command::new("mvn");
        mvn.args(["-B", "-q", "-DskipTests", "-f"])
            .arg(required.join("pom.xml"))
            .arg("install");
        run_maven(mvn, &format!("install {}, which {} needs", required.display(), project.what))?;
    }
    progress(&format!("building {} with Maven ({})", project.what, project.dir.display()));
    let tmp = project.cache.join(format!(".build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;
    let result = build_into(project, &pom, &tmp, &jar_name);
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if let Err(e) = std::fs::rename(&tmp, &dir) {
        let _ = std::fs::remove_dir_all(&tmp);
        // Another process built the same sources meanwhile: its copy is as good.
        if !dir.join(&jar_name).exists() {
            return Err(format!("cannot move the build of {} to {}: {e}", project.what, dir.display()));
        }
    }
    Ok(built(&dir))
}

/// Runs the Maven build of `project` and copies its jar (and dependencies) into `out`.
fn build_into(project: &MavenProject<'_>, pom: &Path, out: &Path, jar_name: &str) -> Result<(), String> {
    let mut mvn = Command::new("mvn");
    mvn.args(["-B", "-q", "-DskipTests", "-f"]).arg(pom).arg("package");
    if project.dependencies {
        mvn.arg("dependency:copy-dependencies")
            .arg("-DincludeScope=runtime")
            .arg(format!("-DoutputDirectory={}", out.join("lib").display()));
    }
    run_maven(mvn, &format!("build {}", project.what))?;
    let target = project.dir.join("target");
    let jar = std::fs::read_dir(&target)
        .map_err(|e| format!("mvn finished but {} is missing: {e}", target.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with(project.artifact) && name.ends_with(".jar") && !name.contains("sources") && !name.contains("tests")
        })
        .ok_or_else(|| format!("mvn finished but built no {} jar in {}", project.artifact, target.display()))?;
    let to = out.join(jar_name);
    std::fs::copy(&jar, &to).map_err(|e| format!("cannot copy {} to {}: {e}", jar.display(), to.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny Maven project (a pom and one source) in a fresh directory under the system's
    /// temporary directory.
    fn project(root: &Path, name: &str, source: &str) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(dir.join("src/main/java")).unwrap();
        std::fs::write(dir.join("pom.xml"), format!("<project>{name}</project>")).unwrap();
        std::fs::write(dir.join("src/main/java/A.java"), source).unwrap();
        dir
    }

    #[test]
    fn the_hash_covers_the_required_projects_sources() {
        let root = std::env::temp_dir().join(format!("replica-lb-hash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let plugin = project(&root, "plugin", "class A {}");
        let core = project(&root, "core", "class B {}");
        let alone = sources_hash(&plugin).unwrap();
        assert_eq!(sources_hash_of(&[&plugin]).unwrap(), alone, "one project: the same key as before");
        let with_core = sources_hash_of(&[&plugin, &core]).unwrap();
        assert_ne!(with_core, alone);
        std::fs::write(core.join("src/main/java/A.java"), "class B { int x; }").unwrap();
        let edited = sources_hash_of(&[&plugin, &core]).unwrap();
        assert_ne!(edited, with_core, "an edit to the core changes the plug-in's key");
        assert_eq!(sources_hash(&plugin).unwrap(), alone);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
