//! A test that cannot run here says so: what it needs (root, a tool, a kernel feature) is either
//! there, or the test fails with one line naming it, unless the environment variable
//! `ROCE_TEST_SKIP` lists that need (`ROCE_TEST_SKIP=root,setpriv`; `all` lists every need), in
//! which case the test prints "skipping: ..." and passes without running. CI sets no
//! `ROCE_TEST_SKIP`, so it runs them all.

use std::path::Path;

/// The variable that lists the needs a test may skip without.
pub const VAR: &str = "ROCE_TEST_SKIP";

/// Whether the test may go on: `true` when `available`. Otherwise, when [`VAR`] lists `need`,
/// prints "skipping: `why`" and returns `false` (the test returns and passes); else the test
/// fails with one line naming the need and the variable.
pub fn require(need: &str, available: bool, why: &str) -> bool {
    check(
        &std::env::var(VAR).unwrap_or_default(),
        need,
        available,
        why,
    )
}

/// [`require`] with the variable's value `listed`.
fn check(listed: &str, need: &str, available: bool, why: &str) -> bool {
    if available {
        return true;
    }
    if allows(listed, need) {
        eprintln!("skipping: {why} ({VAR}={listed})");
        return false;
    }
    panic!("missing {need}: {why} (to skip such tests instead, set {VAR}={need})");
}

/// Whether the list `listed` (comma-separated needs, or `all`) names `need`.
pub fn allows(listed: &str, need: &str) -> bool {
    listed
        .split(',')
        .map(str::trim)
        .any(|w| w == need || w == "all")
}

/// Whether this process runs as root (effective user id 0, from `/proc/self/status`).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
    })
}

/// Whether the program `path` exists.
pub fn tool(path: &str) -> bool {
    Path::new(path).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_need_is_allowed_only_when_listed_or_all_are() {
        assert!(allows("root", "root"));
        assert!(allows("qemu, root", "root"));
        assert!(allows("all", "setpriv"));
        assert!(!allows("", "root"));
        assert!(!allows("rootless", "root"));
        assert!(!allows("qemu", "root"));
    }

    #[test]
    fn an_available_need_runs_whatever_the_list() {
        assert!(check("", "root", true, "never printed"));
        assert!(check("root", "root", true, "never printed"));
    }

    #[test]
    fn a_missing_need_the_list_names_skips() {
        assert!(!check("qemu,root", "root", false, "namespaces need root"));
    }

    #[test]
    #[should_panic(
        expected = "missing root: namespaces need root (to skip such tests instead, set ROCE_TEST_SKIP=root)"
    )]
    fn a_missing_need_the_list_does_not_name_fails() {
        check("qemu", "root", false, "namespaces need root");
    }
}
