//! Words of source text, without parsing: what lets the symbol index skip
//! a parse that cannot matter.
//!
//! A `semantic` note needs a function name that one side's old files
//! define and the other side's written lines use; both are words of the
//! text. So a side whose old files share no word with the other side's
//! written lines (reserved keywords aside: no function is named `fn`) can
//! be left unparsed, and a written file that does not contain a changed
//! function's name need not be parsed to look for its uses.
//!
//! Invariants: a word set is a superset of the identifiers tree-sitter
//! finds in that text (maximal runs of letters, digits, `_` and `$`, and
//! their `$`-free parts); only reserved words of every language of a
//! family are left out.

use std::collections::HashSet;

use owt_protocol::guard::LineRange;

const RUST: &str =
    "as async await break const continue crate dyn else enum extern false fn for if \
     impl in let loop match mod move mut pub ref return self Self static struct super \
     trait true type unsafe use where while";
const PYTHON: &str =
    "False None True and as assert async await break class continue def del elif else \
     except finally for from global if import in is lambda nonlocal not or pass raise \
     return try while with yield";
const SCRIPT: &str =
    "break case catch class const continue debugger default delete do else export \
     extends false finally for function if import in instanceof new null return super \
     switch this throw true try typeof var void while with";
const GO: &str = "break case chan const continue default defer else fallthrough for func go goto \
     if import interface map package range return select struct switch type var";
const C: &str = "auto break case char const continue default do double else enum extern float for \
     goto if int long register return short signed sizeof static struct switch \
     typedef union unsigned void volatile while";
const JAVA: &str =
    "abstract assert boolean break byte case catch char class const continue default \
     do double else enum extends false final finally float for goto if implements \
     import instanceof int interface long native new null package private protected \
     public return short static strictfp super switch synchronized this throw throws \
     transient true try void volatile while";

/// Words reserved in every language of a [`super::Lang::family`]: never
/// the name of a function.
fn reserved(family: u8) -> &'static str {
    match family {
        0 => RUST,
        1 => PYTHON,
        2 => SCRIPT,
        3 => GO,
        4 => C,
        5 => JAVA,
        _ => "",
    }
}

/// The reserved words of each family, as sets (made once).
fn reserved_set(family: u8) -> &'static HashSet<&'static str> {
    static SETS: std::sync::OnceLock<Vec<HashSet<&'static str>>> = std::sync::OnceLock::new();
    let sets = SETS.get_or_init(|| {
        (0..=6)
            .map(|f| reserved(f).split_ascii_whitespace().collect())
            .collect()
    });
    &sets[usize::from(family.min(6))]
}

/// Calls `f` with each word of `text`: maximal runs of alphanumeric
/// characters, `_` and `$` (of the text read as UTF-8, an invalid sequence
/// ending a run), and a run's `$`-free parts; a word may come more than
/// once.
fn each_word(text: &[u8], mut f: impl FnMut(&str)) {
    let mut run_words = |run: &str| {
        f(run);
        if run.contains('$') {
            run.split('$').filter(|w| !w.is_empty()).for_each(&mut f);
        }
    };
    // Runs of ASCII word bytes and non-ASCII bytes, cut at every other
    // ASCII byte; a run with non-ASCII bytes is cut again as characters
    // (a UTF-8 sequence never spans an ASCII byte, so each run decodes as
    // it would in the whole text).
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'$' || *b >= 0x80;
    for run in text.split(|b| !word(b)).filter(|r| !r.is_empty()) {
        if run.is_ascii() {
            // ASCII is UTF-8.
            run_words(std::str::from_utf8(run).unwrap_or_default());
            continue;
        }
        let decoded = String::from_utf8_lossy(run);
        decoded
            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .filter(|w| !w.is_empty())
            .for_each(&mut run_words);
    }
}

/// Adds the words of `text` ([`each_word`]) not reserved in `family` and
/// not starting with a digit to `out`.
pub fn add_words(text: &[u8], family: u8, out: &mut HashSet<String>) {
    let reserved = reserved_set(family);
    each_word(text, |word| {
        let first = word.as_bytes().first();
        if first.is_some_and(|c| !c.is_ascii_digit())
            && !out.contains(word)
            && !reserved.contains(word)
        {
            out.insert(word.to_string());
        }
    });
}

/// The words of the lines `ranges` (1-based) of `text`.
pub fn words_of_lines(text: &[u8], ranges: &[LineRange], family: u8) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut ranges: Vec<LineRange> = ranges.to_vec();
    ranges.sort_by_key(|r| r.start);
    let mut it = ranges.iter().peekable();
    for (i, line) in text.split(|b| *b == b'\n').enumerate() {
        let n = i as u32 + 1;
        while it
            .peek()
            .is_some_and(|r| r.start.saturating_add(r.lines) <= n)
        {
            it.next();
        }
        let Some(r) = it.peek() else {
            break;
        };
        if r.start <= n {
            add_words(line, family, &mut out);
        }
    }
    out
}

/// The lines of `text` that hold a word of `names` (as identifiers).
pub fn lines_naming(text: &[u8], names: &HashSet<String>) -> Vec<LineRange> {
    let mut out = Vec::new();
    for (i, line) in text.split(|b| *b == b'\n').enumerate() {
        // Words as `add_words` cuts them.
        let mut named = false;
        each_word(line, |word| named = named || names.contains(word));
        if named {
            out.push(LineRange {
                start: i as u32 + 1,
                lines: 1,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `add_words` as it was first written (the whole text decoded, cut
    /// at characters), to check the faster one against.
    fn add_words_by_chars(text: &[u8], family: u8, out: &mut HashSet<String>) {
        let text = String::from_utf8_lossy(text);
        let reserved = reserved(family);
        let reserved = |word: &str| reserved.split_ascii_whitespace().any(|r| r == word);
        let mut add = |word: &str| {
            let first = word.chars().next();
            if first.is_some_and(|c| !c.is_ascii_digit()) && !reserved(word) {
                out.insert(word.to_string());
            }
        };
        for run in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')) {
            if run.is_empty() {
                continue;
            }
            add(run);
            if run.contains('$') {
                run.split('$').filter(|w| !w.is_empty()).for_each(&mut add);
            }
        }
    }

    #[test]
    fn words_and_lines_naming_them_are_as_cutting_the_decoded_text_at_characters() {
        let mut texts: Vec<Vec<u8>> = vec![
            "naïve_fn(x)→y — größe$ß 名前_1 ∑i 3d $a$b".into(),
            b"bad \xff\xfe utf\xc3(x) tail\xe2\x82 end".to_vec(),
            vec![
                b'a', 0xc3, 0xa9, b'b', 0xe2, 0x80, 0x94, b'c', 0xff, b'd', 0xf0, 0x9f,
            ],
        ];
        // And real code: this crate's sources.
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for entry in std::fs::read_dir(&src).unwrap().flatten() {
            if entry.path().extension().is_some_and(|e| e == "rs") {
                texts.push(std::fs::read(entry.path()).unwrap());
            }
        }
        assert!(texts.len() > 10);
        for text in &texts {
            // The lines naming some of its words: those whose words, cut
            // at characters, hold one.
            let mut all = HashSet::new();
            add_words_by_chars(text, 6, &mut all);
            let mut all: Vec<String> = all.into_iter().collect();
            all.sort();
            let names: HashSet<String> = all.into_iter().step_by(7).collect();
            let expected: Vec<u32> = text
                .split(|b| *b == b'\n')
                .enumerate()
                .filter(|(_, line)| {
                    let mut words = HashSet::new();
                    add_words_by_chars(line, 6, &mut words);
                    !words.is_disjoint(&names)
                })
                .map(|(i, _)| i as u32 + 1)
                .collect();
            let found: Vec<u32> = lines_naming(text, &names).iter().map(|r| r.start).collect();
            assert_eq!(found, expected);
            for family in 0..=6 {
                let (mut fast, mut slow) = (HashSet::new(), HashSet::new());
                add_words(text, family, &mut fast);
                add_words_by_chars(text, family, &mut slow);
                assert_eq!(
                    fast,
                    slow,
                    "family {family}: {}",
                    String::from_utf8_lossy(&text[..text.len().min(80)])
                );
            }
        }
    }

    #[test]
    fn words_are_identifiers_without_reserved_ones() {
        let mut out = HashSet::new();
        add_words(
            b"fn load(x: u32) -> $a$b { parse_config(2x) } // 3d",
            0,
            &mut out,
        );
        let mut words: Vec<&str> = out.iter().map(String::as_str).collect();
        words.sort();
        assert_eq!(
            words,
            vec!["$a$b", "a", "b", "load", "parse_config", "u32", "x"]
        );
        let lines = words_of_lines(
            b"one\ntwo\nthree\nfour\n",
            &[
                LineRange { start: 2, lines: 1 },
                LineRange { start: 4, lines: 9 },
            ],
            0,
        );
        let mut lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        lines.sort();
        assert_eq!(lines, vec!["four", "two"]);
    }
}
