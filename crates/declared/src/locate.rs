//! Where a path (`tools[2].command[3]`) is in a file's text, so a problem found after the
//! file parsed can still name its line and column.
//!
//! YAML and JSON (a subset of YAML's flow style) are walked as `yaml-rust2` events, which
//! carry positions; TOML through `toml`'s spanned document. When the path is not all there
//! (a member that is missing), the deepest part that is gives the place.

use crate::error::{Location, Seg};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::Marker;

/// The place of `path` in a YAML or JSON text.
pub fn in_yaml(text: &str, path: &[Seg]) -> Option<Location> {
    let mut parser = Parser::new_from_str(text);
    let mut walk = YamlWalk {
        target: path,
        best: None,
        here: Vec::new(),
    };
    loop {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) | Err(_) => break,
            Ok((Event::StreamStart | Event::DocumentStart, _)) => continue,
            Ok((ev, mark)) => {
                if walk.node(&mut parser, ev, mark).is_err() {
                    break;
                }
                // Only the first document holds the tools.
                break;
            }
        }
    }
    walk.best.map(|(_, m)| Location {
        line: m.line(),
        column: m.col() + 1,
    })
}

struct YamlWalk<'p> {
    target: &'p [Seg],
    best: Option<(usize, Marker)>,
    here: Vec<Seg>,
}

impl YamlWalk<'_> {
    fn record(&mut self, mark: Marker) {
        let depth = self.here.len();
        if self.target.starts_with(&self.here) && self.best.is_none_or(|(d, _)| depth > d) {
            self.best = Some((depth, mark));
        }
    }

    fn node(
        &mut self,
        p: &mut Parser<std::str::Chars<'_>>,
        ev: Event,
        mark: Marker,
    ) -> Result<(), ()> {
        self.record(mark);
        match ev {
            Event::SequenceStart(..) => {
                let mut i = 0;
                loop {
                    let (ev, mark) = p.next_token().map_err(|_| ())?;
                    if matches!(ev, Event::SequenceEnd) {
                        return Ok(());
                    }
                    self.here.push(Seg::Index(i));
                    let r = self.node(p, ev, mark);
                    self.here.pop();
                    r?;
                    i += 1;
                }
            }
            Event::MappingStart(..) => loop {
                let (ev, mark) = p.next_token().map_err(|_| ())?;
                let key = match ev {
                    Event::MappingEnd => return Ok(()),
                    Event::Scalar(k, ..) => k,
                    other => {
                        // A complex key: skip it and its value.
                        self.skip(p, other)?;
                        let (ev, _) = p.next_token().map_err(|_| ())?;
                        self.skip(p, ev)?;
                        continue;
                    }
                };
                self.here.push(Seg::Key(key));
                self.record(mark);
                let (ev, mark) = p.next_token().map_err(|_| ())?;
                let r = self.node(p, ev, mark);
                self.here.pop();
                r?;
            },
            _ => Ok(()),
        }
    }

    fn skip(&mut self, p: &mut Parser<std::str::Chars<'_>>, ev: Event) -> Result<(), ()> {
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
}

/// The place of `path` in a TOML text.
pub fn in_toml(text: &str, path: &[Seg]) -> Option<Location> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(text).ok()?;
    let mut best = doc.span().start;
    let mut table: Option<&DeTable<'_>> = Some(doc.get_ref());
    let mut array: Option<&toml::de::DeArray<'_>> = None;
    for seg in path {
        let value = match (seg, table, array) {
            (Seg::Key(k), Some(t), _) => {
                let Some((key, value)) = t.iter().find(|(key, _)| key.get_ref().as_ref() == k)
                else {
                    break;
                };
                best = key.span().start;
                value
            }
            (Seg::Index(i), _, Some(a)) => match a.get(*i) {
                Some(v) => {
                    best = v.span().start;
                    v
                }
                None => break,
            },
            _ => break,
        };
        table = None;
        array = None;
        match value.get_ref() {
            DeValue::Table(t) => table = Some(t),
            DeValue::Array(a) => array = Some(a),
            _ => {}
        }
    }
    Some(location_of(text, best))
}

/// The line and column of a byte offset.
pub fn location_of(text: &str, offset: usize) -> Location {
    let offset = offset.min(text.len());
    let before = &text[..text.floor_char_boundary(offset)];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    Location {
        line,
        column: before[start..].chars().count() + 1,
    }
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
        let at = |s: &[&str]| in_yaml(YAML, &p(s)).map(|l| (l.line, l.column));
        assert_eq!(at(&["tools", "0", "command", "2"]), Some((3, 27)));
        assert_eq!(at(&["tools", "1", "http", "url"]), Some((6, 7)));
        // A missing member: the deepest part that is there.
        assert_eq!(at(&["tools", "1", "http", "method"]), Some((5, 5)));
        assert_eq!(at(&["tools", "1"]).map(|l| l.0), Some(4));
    }

    #[test]
    fn json_paths() {
        let json =
            "{\n  \"tools\": [\n    {\"name\": \"a\", \"command\": [\"true\", \"{x}\"]}\n  ]\n}";
        let l = in_yaml(json, &p(&["tools", "0", "command", "1"])).unwrap();
        assert_eq!((l.line, l.column), (3, 39));
    }

    #[test]
    fn toml_paths() {
        let toml =
            "[[tools]]\nname = \"a\"\ncommand = [\"true\", \"{x}\"]\n\n[[tools]]\nname = \"b\"\n";
        let at = |s: &[&str]| in_toml(toml, &p(s)).map(|l| (l.line, l.column));
        assert_eq!(at(&["tools", "0", "command", "1"]), Some((3, 20)));
        assert_eq!(at(&["tools", "1", "name"]), Some((6, 1)));
    }
}
