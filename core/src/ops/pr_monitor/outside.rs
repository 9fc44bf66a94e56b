//! Pull-request comments by outside authors: those `[feedback]
//! comment_authors` does not route (by default, anyone who is not one of
//! the repository's own people). Counted on the session's fact and listed
//! as a `comment-not-routed` watch event once each; never typed.

use owt_protocol::WatchEvent;

use super::event;
use crate::config::CommentAuthors;
use crate::forge::PrSnapshot;
use crate::status::feedback::PrFact;
use crate::store::SessionRow;

/// Notes the comments of `pr` that `authors` does not route in
/// `fact.outside_comments` (only those, so a comment a changed
/// `comment_authors` now routes leaves the count), with one event for the
/// new ones. Whether there were new ones.
pub(super) fn note_outside_comments(
    authors: &CommentAuthors,
    row: &SessionRow,
    fact: &mut PrFact,
    pr: &PrSnapshot,
    events: &mut Vec<WatchEvent>,
) -> bool {
    let outside: Vec<&crate::forge::ForgeComment> = pr
        .comments
        .iter()
        .filter(|c| !fact.told_comments.contains(&c.id))
        .filter(|c| !authors.routes(&c.author, c.collaborator))
        .collect();
    let new: Vec<&&crate::forge::ForgeComment> = outside
        .iter()
        .filter(|c| !fact.outside_comments.contains(&c.id))
        .collect();
    let seen = !new.is_empty();
    if seen {
        let who = new
            .iter()
            .map(|c| match &c.place {
                Some(place) => format!("@{} on {place}", c.author),
                None => format!("@{}", c.author),
            })
            .collect::<Vec<_>>()
            .join(", ");
        events.push(event(
            row,
            fact.number,
            "comment-not-routed",
            format!("{who} (outside authors, see [feedback] comment_authors)"),
            false,
        ));
    }
    fact.outside_comments = outside.iter().map(|c| c.id.clone()).collect();
    seen
}
