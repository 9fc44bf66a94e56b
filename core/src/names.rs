//! Session names, branch names and worktree paths derived from user text.
//!
//! Invariant: a slug contains only `[a-z0-9-]`, never starts or ends with
//! `-`, is never empty and never longer than [`MAX_SLUG`], so a worktree path
//! built from it stays inside `base_directory` whatever the input was
//! (spaces, unicode, `../`, a leading `-`, shell metacharacters).

use std::path::{Path, PathBuf};

/// Longest slug (keeps paths and branch names readable).
pub const MAX_SLUG: usize = 40;

/// `Add JWT auth!` → `add-jwt-auth`. Falls back to `session` when nothing
/// usable is left.
pub fn slugify(text: &str) -> String {
    let mut slug = String::new();
    let mut dash = false;
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            let sep = dash && !slug.is_empty();
            if slug.len() + usize::from(sep) + 1 > MAX_SLUG {
                break;
            }
            if sep {
                slug.push('-');
            }
            dash = false;
            slug.push(c);
        } else {
            dash = true;
        }
    }
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        "session".to_string()
    } else {
        slug.to_string()
    }
}

/// The branch owt creates for a session without `--branch`.
pub fn default_branch(slug: &str) -> String {
    format!("owt/{slug}")
}

/// The `n`-th name tried for a session whose wanted name is `name`:
/// `name`, `name-2`, `name-3`, … (the store takes the first one free). The
/// name is shortened before the suffix so a slug stays a slug: at most
/// [`MAX_SLUG`] bytes, no `-` before the suffix.
pub fn candidate_name(name: &str, n: u32) -> String {
    if n <= 1 {
        return name.to_string();
    }
    let suffix = format!("-{n}");
    let mut keep = name.len();
    if keep + suffix.len() > MAX_SLUG {
        keep = MAX_SLUG.saturating_sub(suffix.len());
        while !name.is_char_boundary(keep) {
            keep -= 1;
        }
    }
    format!("{}{suffix}", name[..keep].trim_end_matches('-'))
}

/// The default folder for the worktrees of the repository checked out at
/// `repo_root`: `<parent>/<name>.worktrees`, beside it. A checkout inside
/// another one (a submodule, a nested clone) gets its folder beside the
/// outermost enclosing checkout `outer` instead, named after the path
/// between them (`/src/sup` + `sup/libs/sm` → `/src/sup.libs.sm.worktrees`),
/// so no worktree ever lands inside a checkout.
pub fn worktrees_folder(repo_root: &Path, outer: Option<&Path>) -> PathBuf {
    let name_of = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repo".into())
    };
    match outer.and_then(|o| Some((o, repo_root.strip_prefix(o).ok()?))) {
        Some((outer, inner)) if !inner.as_os_str().is_empty() => {
            let mut name = name_of(outer);
            for part in inner.components() {
                name.push('.');
                name.push_str(&part.as_os_str().to_string_lossy());
            }
            outer
                .parent()
                .unwrap_or(outer)
                .join(format!("{name}.worktrees"))
        }
        _ => repo_root
            .parent()
            .unwrap_or(repo_root)
            .join(format!("{}.worktrees", name_of(repo_root))),
    }
}

/// `<base>/<slug>`, checked to stay inside `base`.
pub fn worktree_path(base: &Path, slug: &str) -> PathBuf {
    debug_assert_eq!(slug, slugify(slug), "worktree names must be slugs");
    base.join(slug)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        let cases = [
            ("Add JWT auth!", "add-jwt-auth"),
            ("  fix   login  ", "fix-login"),
            ("../../etc/passwd", "etc-passwd"),
            ("-rf --no-preserve-root", "rf-no-preserve-root"),
            (
                "$(rm -rf ~); `echo hi` | cat > /tmp/x",
                "rm-rf-echo-hi-cat-tmp-x",
            ),
            ("Überprüfe Straße", "berpr-fe-stra-e"),
            ("日本語", "session"),
            ("", "session"),
            ("...", "session"),
            ("a/b\\c", "a-b-c"),
            ("CamelCase42", "camelcase42"),
        ];
        for (input, want) in cases {
            assert_eq!(slugify(input), want, "slugify({input:?})");
        }
    }

    #[test]
    fn slugs_are_bounded() {
        let long = "word ".repeat(100);
        let slug = slugify(&long);
        assert!(slug.len() <= MAX_SLUG, "{slug}");
        assert!(!slug.ends_with('-'));
    }

    #[test]
    fn numbered_names() {
        assert_eq!(candidate_name("fix-login", 1), "fix-login");
        assert_eq!(candidate_name("fix-login", 2), "fix-login-2");
        assert_eq!(candidate_name("fix-login", 12), "fix-login-12");
    }

    /// Found by the `slug` fuzz target (corpus file `seed-digits`): the
    /// store numbered a 40-byte slug `…-2`, a 42-byte name that is not its
    /// own slug, so `worktree_path` hit its debug assertion.
    #[test]
    fn regression_numbered_name_of_a_max_length_slug_exceeded_max_slug() {
        let slug = slugify(&"1234567890 ".repeat(5));
        assert_eq!(slug.len(), MAX_SLUG);
        let name = candidate_name(&slug, 2);
        assert_eq!(name, "1234567890-1234567890-1234567890-12345-2");
        assert_eq!(slugify(&name), name);
        // The cut lands after a `-`: no `--` before the number.
        let name = candidate_name(&slug, 123_456);
        assert_eq!(name, "1234567890-1234567890-1234567890-123456");
        assert_eq!(
            candidate_name(&slug, u32::MAX),
            "1234567890-1234567890-1234567-4294967295"
        );
    }

    #[test]
    fn worktrees_of_a_nested_checkout_go_beside_the_outermost_one() {
        let root = Path::new("/src/sup/libs/sm");
        assert_eq!(
            worktrees_folder(root, Some(Path::new("/src/sup"))),
            PathBuf::from("/src/sup.libs.sm.worktrees")
        );
        assert_eq!(
            worktrees_folder(Path::new("/src/app"), None),
            PathBuf::from("/src/app.worktrees")
        );
        assert_eq!(
            worktrees_folder(Path::new("/src/app"), Some(Path::new("/src/app"))),
            PathBuf::from("/src/app.worktrees")
        );
    }

    #[test]
    fn worktree_paths_stay_inside_base() {
        let base = Path::new("/tmp/repo.worktrees");
        for input in ["..", "../x", "/abs", "a/../../b", "~", "-", ".git"] {
            let path = worktree_path(base, &slugify(input));
            assert_eq!(path.parent(), Some(base), "{input:?} → {path:?}");
        }
    }
}
