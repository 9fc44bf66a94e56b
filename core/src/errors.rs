//! How library errors carry their causes: each `thiserror` variant prints
//! its cause in its own message and does not also return it as `source()`
//! (a variant that only forwards another error is `#[error(transparent)]`).
//! So `{}` of a library error says everything, and `{:#}` of an
//! `anyhow::Error` — what `owt` prints — says each cause once, after the
//! context the edges add. Code that needs a cause matches the typed
//! variant (`StoreError::sqlite`, `SessionError::hint`), never its text.
//!
//! This module holds the check of that rule.

#[cfg(test)]
mod tests {
    use std::io;
    use std::path::PathBuf;

    use crate::config::ConfigError;
    use crate::git::GitError;
    use crate::guard::GuardError;
    use crate::session::SessionError;
    use crate::ship::ShipError;
    use crate::store::StoreError;

    fn cause() -> io::Error {
        io::Error::other("disk on fire")
    }

    fn git_cause() -> git2::Error {
        git2::Error::from_str("disk on fire")
    }

    /// Regression: variants printed their cause and also returned it as
    /// `source`, so `{:#}` (what `owt` prints) said it twice.
    #[test]
    fn every_cause_is_printed_once() {
        let path = PathBuf::from("/x/y");
        let errors: Vec<anyhow::Error> = vec![
            GitError::Io {
                path: path.clone(),
                error: cause(),
            }
            .into(),
            GitError::Git(git_cause()).into(),
            GuardError::Io {
                path: path.clone(),
                error: cause(),
            }
            .into(),
            GuardError::Git(git_cause()).into(),
            StoreError::CreateHome {
                path: path.clone(),
                error: cause(),
            }
            .into(),
            ConfigError::Read {
                path: path.clone(),
                error: cause(),
            }
            .into(),
            SessionError::io("writing /x/y", cause()).into(),
            crate::provider::integration::IntegrationError::Io {
                context: "writing /x/y".into(),
                error: cause(),
            }
            .into(),
            SessionError::Store(StoreError::CreateHome {
                path: path.clone(),
                error: cause(),
            })
            .into(),
            ShipError::Git(git_cause()).into(),
            anyhow::Error::new(GuardError::Git(git_cause())).context("computing the guard"),
        ];
        for err in errors {
            let text = format!("{err:#}");
            assert_eq!(text.matches("disk on fire").count(), 1, "{text}");
            assert!(
                err.to_string().contains("disk on fire")
                    || err
                        .chain()
                        .skip(1)
                        .any(|c| c.to_string().contains("disk on fire")),
                "the cause is said: {text}"
            );
        }
    }
}
