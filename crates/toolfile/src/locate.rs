//! Where a path (`tools[2].command[3]`) is in a file's text, so a problem found after the
//! file parsed can still name its line and column.
//!
//! The text is read once into an [`Index`]: the place of every member and item, as a tree
//! that mirrors the document. Placing a path then walks that tree, so placing many problems
//! costs one parse of the text, not one per problem. YAML and JSON (a subset of YAML's flow
//! style) are read as `yaml-rust2` events, which carry positions; TOML through `toml`'s
//! spanned document. When the path is not all there (a member that is missing), the deepest
//! part that is gives the place.

use crate::document::Format;
use crate::error::{Location, Seg};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::Marker;

/// The place of every member and item of one text.
#[derive(Debug, Default)]
pub struct Index {
    root: Option<Node>,
}

/// One value: where it is (for a member, where its key is) and what it holds.
#[derive(Debug)]
struct Node {
    at: Location,
    kids: Kids,
}

#[derive(Debug, Default)]
enum Kids {
    #[default]
    Leaf,
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl Node {
    fn new(at: Location) -> Node {
        Node {
            at,
            kids: Kids::Leaf,
        }
    }

    /// Its places, read as yaml-rust2 counts lines and columns, as the crate counts them.
    fn replace(&mut self, places: &YamlPlaces<'_>) {
        self.at = places.place(self.at.line, self.at.column);
        match &mut self.kids {
            Kids::Leaf => {}
            Kids::Seq(items) => items.iter_mut().for_each(|n| n.replace(places)),
            Kids::Map(members) => members.iter_mut().for_each(|(_, n)| n.replace(places)),
        }
    }

    fn child(&self, seg: &Seg) -> Option<&Node> {
        match (seg, &self.kids) {
            (Seg::Index(i), Kids::Seq(items)) => items.get(*i),
            (Seg::Key(k), Kids::Map(members)) => {
                members.iter().find(|(key, _)| key == k).map(|(_, n)| n)
            }
            _ => None,
        }
    }
}

impl Index {
    /// Reads a text of `format`.
    pub fn of(format: Format, text: &str) -> Index {
        match format {
            Format::Yaml | Format::Json => Index::yaml(text),
            Format::Toml => Index::toml(text),
        }
    }

    /// Reads a YAML or JSON text (its first document).
    pub fn yaml(text: &str) -> Index {
        let mut parser = Parser::new_from_str(text);
        loop {
            match parser.next_token() {
                Ok((Event::StreamEnd, _)) | Err(_) => return Index::default(),
                Ok((Event::StreamStart | Event::DocumentStart, _)) => continue,
                Ok((ev, mark)) => {
                    let mut root = Node::new(yaml_location(mark));
                    // A text that stops parsing keeps the places read before it stopped.
                    let _ = yaml_fill(&mut parser, ev, &mut root);
                    root.replace(&YamlPlaces::of(text));
                    return Index { root: Some(root) };
                }
            }
        }
    }

    /// Reads a TOML text.
    pub fn toml(text: &str) -> Index {
        use toml::de::DeTable;
        let Ok(doc) = DeTable::parse(text) else {
            return Index {
                root: Some(Node::new(Location { line: 1, column: 1 })),
            };
        };
        let lines = Lines::of(text);
        let mut root = Node::new(lines.location(doc.span().start));
        root.kids = toml_table(doc.get_ref(), &lines);
        Index { root: Some(root) }
    }

    /// The place of `path`, or of the deepest part of it that is in the text.
    pub fn locate(&self, path: &[Seg]) -> Option<Location> {
        let mut here = self.root.as_ref()?;
        for seg in path {
            match here.child(seg) {
                Some(next) => here = next,
                None => break,
            }
        }
        Some(here.at)
    }
}

fn yaml_location(m: Marker) -> Location {
    Location {
        line: m.line(),
        column: m.col() + 1,
    }
}

/// Reads the value that starts with `ev` into `node`, member by member and item by item.
fn yaml_fill(p: &mut Parser<std::str::Chars<'_>>, ev: Event, node: &mut Node) -> Result<(), ()> {
    match ev {
        Event::SequenceStart(..) => {
            node.kids = Kids::Seq(Vec::new());
            loop {
                let (ev, mark) = p.next_token().map_err(|_| ())?;
                if matches!(ev, Event::SequenceEnd) {
                    return Ok(());
                }
                let Kids::Seq(items) = &mut node.kids else {
                    unreachable!("set above")
                };
                items.push(Node::new(yaml_location(mark)));
                let item = items.last_mut().ok_or(())?;
                yaml_fill(p, ev, item)?;
            }
        }
        Event::MappingStart(..) => {
            node.kids = Kids::Map(Vec::new());
            loop {
                let (ev, mark) = p.next_token().map_err(|_| ())?;
                let key = match ev {
                    Event::MappingEnd => return Ok(()),
                    Event::Scalar(k, ..) => k,
                    other => {
                        // A complex key: skip it and its value.
                        yaml_skip(p, other)?;
                        let (ev, _) = p.next_token().map_err(|_| ())?;
                        yaml_skip(p, ev)?;
                        continue;
                    }
                };
                let Kids::Map(members) = &mut node.kids else {
                    unreachable!("set above")
                };
                let at = yaml_location(mark);
                // A block mapping's start is marked where its first `:` is: it is placed at
                // its first key instead.
                if members.is_empty() && at < node.at {
                    node.at = at;
                }
                members.push((key, Node::new(at)));
                let (_, member) = members.last_mut().ok_or(())?;
                let (ev, _) = p.next_token().map_err(|_| ())?;
                yaml_fill(p, ev, member)?;
            }
        }
        _ => Ok(()),
    }
}

fn yaml_skip(p: &mut Parser<std::str::Chars<'_>>, ev: Event) -> Result<(), ()> {
    let mut depth = match ev {
        Event::SequenceStart(..) | Event::MappingStart(..) => 1,
        _ => return Ok(()),
    };
    while depth > 0 {
        match p.next_token().map_err(|_| ())?.0 {
            Event::SequenceStart(..) | Event::MappingStart(..) => depth += 1,
            Event::SequenceEnd | Event::MappingEnd => depth -= 1,
            _ => {}
        }
    }
    Ok(())
}

fn toml_table(t: &toml::de::DeTable<'_>, lines: &Lines<'_>) -> Kids {
    Kids::Map(
        t.iter()
            .map(|(key, value)| {
                let mut node = Node::new(lines.location(key.span().start));
                node.kids = toml_kids(value.get_ref(), lines);
                (key.get_ref().to_string(), node)
            })
            .collect(),
    )
}

fn toml_kids(v: &toml::de::DeValue<'_>, lines: &Lines<'_>) -> Kids {
    use toml::de::DeValue;
    match v {
        DeValue::Table(t) => toml_table(t, lines),
        DeValue::Array(a) => Kids::Seq(
            a.iter()
                .map(|item| {
                    let mut node = Node::new(lines.location(item.span().start));
                    node.kids = toml_kids(item.get_ref(), lines);
                    node
                })
                .collect(),
        ),
        _ => Kids::Leaf,
    }
}

/// Where each line of a text starts, to turn byte offsets into lines and columns without
/// counting from the start each time.
struct Lines<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> Lines<'t> {
    fn of(text: &'t str) -> Lines<'t> {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Lines { text, starts }
    }

    fn location(&self, offset: usize) -> Location {
        let offset = self.text.floor_char_boundary(offset.min(self.text.len()));
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        Location {
            line,
            column: self.text[start..offset].chars().count() + 1,
        }
    }
}

/// yaml-rust2's lines and columns, turned into the crate's (lines end at `\n`, columns
/// count characters): its lines also end at a lone `\r`, the end of a text without a final
/// newline is on a line past the last, and in plain scalars a column counts bytes, so its
/// place could be one the text does not have.
pub(crate) struct YamlPlaces<'t> {
    /// Where each of its lines starts.
    starts: Vec<usize>,
    lines: Lines<'t>,
}

impl<'t> YamlPlaces<'t> {
    pub(crate) fn of(text: &'t str) -> YamlPlaces<'t> {
        let bytes = text.as_bytes();
        let mut starts = vec![0];
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
                starts.push(i + 1);
            }
        }
        YamlPlaces {
            starts,
            lines: Lines::of(text),
        }
    }

    /// Where yaml-rust2's 1-based `line` and `column` are.
    pub(crate) fn place(&self, line: usize, column: usize) -> Location {
        let text = self.lines.text;
        let offset = match self.starts.get(line.max(1) - 1) {
            None => text.len(),
            Some(&start) => text[start..]
                .char_indices()
                .take_while(|&(_, c)| c != '\r' && c != '\n')
                .map(|(at, c)| start + at + c.len_utf8())
                .take(column.saturating_sub(1))
                .last()
                .unwrap_or(start),
        };
        self.lines.location(offset)
    }
}

/// The line and column of a byte offset.
pub fn location_of(text: &str, offset: usize) -> Location {
    Lines::of(text).location(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(segs: &[&str]) -> Vec<Seg> {
        segs.iter()
            .map(|s| match s.parse::<usize>() {
                Ok(i) => Seg::Index(i),
                Err(_) => Seg::Key((*s).to_owned()),
            })
            .collect()
    }

    const YAML: &str = "tools:\n  - name: a\n    command: [\"wc\", \"-w\", \"{path}\"]\n  - name: b\n    http:\n      url: x\n";

    #[test]
    fn yaml_paths() {
        let index = Index::yaml(YAML);
        let at = |s: &[&str]| index.locate(&p(s)).map(|l| (l.line, l.column));
        assert_eq!(at(&["tools", "0", "command", "2"]), Some((3, 27)));
        assert_eq!(at(&["tools", "1", "http", "url"]), Some((6, 7)));
        // A missing member: the deepest part that is there.
        assert_eq!(at(&["tools", "1", "http", "method"]), Some((5, 5)));
        assert_eq!(at(&["tools", "1"]), Some((4, 5)));
        assert_eq!(at(&["tools"]), Some((1, 1)));
    }

    #[test]
    fn json_paths() {
        let json =
            "{\n  \"tools\": [\n    {\"name\": \"a\", \"command\": [\"true\", \"{x}\"]}\n  ]\n}";
        let l = Index::yaml(json)
            .locate(&p(&["tools", "0", "command", "1"]))
            .unwrap();
        assert_eq!((l.line, l.column), (3, 39));
    }

    #[test]
    fn toml_paths() {
        let toml =
            "[[tools]]\nname = \"a\"\ncommand = [\"true\", \"{x}\"]\n\n[[tools]]\nname = \"b\"\n";
        let index = Index::toml(toml);
        let at = |s: &[&str]| index.locate(&p(s)).map(|l| (l.line, l.column));
        assert_eq!(at(&["tools", "0", "command", "1"]), Some((3, 20)));
        assert_eq!(at(&["tools", "1", "name"]), Some((6, 1)));
    }

    #[test]
    fn offsets_become_lines_and_columns() {
        let text = "ab\néf\n\nx";
        table! {
            |offset: usize, line: usize, column: usize| {
                assert_eq!(location_of(text, offset), Location { line, column }, "{offset}");
            };
            (0, 1, 1); (2, 1, 3); (3, 2, 1); (4, 2, 1); (5, 2, 2); (6, 2, 3); (7, 3, 1);
            (8, 4, 1); (9, 4, 2); (99, 4, 2);
        }
    }

    #[test]
    fn a_text_that_stops_parsing_keeps_what_came_before() {
        let index = Index::yaml("tools:\n  - name: a\n  - name: [\n");
        assert_eq!(
            index.locate(&p(&["tools", "0", "name"])).map(|l| l.line),
            Some(2)
        );
        assert_eq!(Index::yaml("").locate(&p(&["tools"])), None);
    }
}
