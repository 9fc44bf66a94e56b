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
/// usable is left. A slug longer than [`MAX_SLUG`] is cut at the last word
/// boundary that fits (`…-for-the-0-5-1`, never `…-0-5-1-rele`); one word
/// longer than that is cut where it must.
pub fn slugify(text: &str) -> String {
    let mut slug = String::new();
    let mut dash = false;
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            // One character past the limit is enough to know where to cut.
            if slug.len() > MAX_SLUG {
                break;
            }
            if dash && !slug.is_empty() {
                slug.push('-');
            }
            dash = false;
            slug.push(c);
        } else {
            dash = true;
        }
    }
    if slug.len() > MAX_SLUG {
        let cut = if slug.as_bytes()[MAX_SLUG] == b'-' {
            MAX_SLUG
        } else {
            slug[..MAX_SLUG].rfind('-').unwrap_or(MAX_SLUG)
        };
        slug.truncate(cut);
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

/// What a name given on the command line refers to among `names`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// That very name, or the one name it is a prefix of.
    Found(String),
    /// A prefix of several names (all of them, sorted).
    Ambiguous(Vec<String>),
    /// No name: those close to it (a typo away, or containing it).
    Missing { near: Vec<String> },
}

/// Looks `wanted` up among `names`: exact, else a unique prefix, else the
/// near misses to suggest.
pub fn lookup(wanted: &str, names: &[String]) -> Lookup {
    if names.iter().any(|n| n == wanted) {
        return Lookup::Found(wanted.to_string());
    }
    let mut prefixed: Vec<String> = names
        .iter()
        .filter(|n| !wanted.is_empty() && n.starts_with(wanted))
        .cloned()
        .collect();
    prefixed.sort();
    match prefixed.len() {
        1 => return Lookup::Found(prefixed.remove(0)),
        n if n > 1 => return Lookup::Ambiguous(prefixed),
        _ => {}
    }
    let most = (wanted.chars().count() / 4).clamp(1, 3);
    let mut near: Vec<(usize, String)> = names
        .iter()
        .filter_map(|n| {
            let d = edit_distance(wanted, n);
            (d <= most || (wanted.len() >= 3 && n.contains(wanted))).then(|| (d, n.clone()))
        })
        .collect();
    near.sort();
    Lookup::Missing {
        near: near.into_iter().map(|(_, n)| n).collect(),
    }
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
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

    /// Regression (#34.7): names were cut at 40 characters mid-word.
    #[test]
    fn long_slugs_are_cut_at_a_word_boundary() {
        let cases = [
            (
                "Add a changelog entry for the 0.5.1 release",
                "add-a-changelog-entry-for-the-0-5-1",
            ),
            // A word that ends exactly at the limit is kept whole.
            (&*format!("{} tail", "a".repeat(40)), &*"a".repeat(40)),
            (
                &*format!("ab {} tail", "c".repeat(37)),
                &*format!("ab-{}", "c".repeat(37)),
            ),
            // One word longer than the limit is cut where it must.
            (&*"x".repeat(50), &*"x".repeat(40)),
        ];
        for (input, want) in cases {
            assert_eq!(slugify(input), want, "slugify({input:?})");
        }
    }

    /// #34.7: a unique prefix names a session; a near miss is suggested.
    #[test]
    fn lookup_takes_exact_names_unique_prefixes_and_suggests_near_misses() {
        let names: Vec<String> = ["add-a-changelog-entry", "add-auth", "fix-login", "fix"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let found = |n: &str| Lookup::Found(n.to_string());
        assert_eq!(lookup("fix", &names), found("fix"));
        assert_eq!(lookup("add-a-ch", &names), found("add-a-changelog-entry"));
        assert_eq!(lookup("fix-", &names), found("fix-login"));
        assert_eq!(
            lookup("add-a", &names),
            Lookup::Ambiguous(vec!["add-a-changelog-entry".into(), "add-auth".into()])
        );
        assert_eq!(
            lookup("fix-logn", &names),
            Lookup::Missing {
                near: vec!["fix-login".into()]
            }
        );
        assert_eq!(
            lookup("changelog", &names),
            Lookup::Missing {
                near: vec!["add-a-changelog-entry".into()]
            }
        );
        assert_eq!(lookup("zzz", &names), Lookup::Missing { near: vec![] });
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
        let slug = slugify("1234567890 1234567890 1234567890 1234567 890");
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
