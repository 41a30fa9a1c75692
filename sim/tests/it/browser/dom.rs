//! The DOM a headless browser serialized (`--dump-dom`), read back as a
//! tree. This is what the browser built from the page, not the page: a
//! start tag the HTML parser reads otherwise than an XML parser would (a
//! `<div/>`, say, which HTML leaves open) shows here as wrong nesting.
//!
//! Chromium serializes as HTML: every attribute value in double quotes, the
//! text escaped, except inside `<style>` and `<script>`, which is raw, and
//! void elements (`<meta>`, `<br>`, …) without an end tag.

/// Elements whose serialization has no end tag.
const VOID: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// Elements whose text is serialized raw, unescaped.
const RAW: [&str; 7] = [
    "style", "script", "xmp", "iframe", "noembed", "noframes", "noscript",
];

/// The elements in document order, and every text with the element that
/// holds it.
#[derive(Debug)]
pub struct Dom {
    elements: Vec<Element>,
    texts: Vec<(usize, String)>,
}

#[derive(Debug)]
struct Element {
    tag: String,
    attributes: Vec<(String, String)>,
    parent: Option<usize>,
}

/// One element of a [`Dom`].
#[derive(Clone, Copy)]
pub struct Node<'a> {
    dom: &'a Dom,
    id: usize,
}

impl Dom {
    /// Reads a serialized DOM; an error names the byte offset it is at.
    pub fn parse(html: &str) -> Result<Dom, String> {
        let mut dom = Dom {
            elements: Vec::new(),
            texts: Vec::new(),
        };
        let mut open: Vec<usize> = Vec::new();
        let mut rest = html;
        while let Some(lt) = rest.find('<') {
            dom.text(open.last(), &rest[..lt]);
            rest = &rest[lt..];
            let at = html.len() - rest.len();
            let located = |e: String| format!("byte {at}: {e}");
            rest = if let Some(after) = rest.strip_prefix("<!--") {
                let end = after
                    .find("-->")
                    .ok_or_else(|| located("unclosed comment".into()))?;
                &after[end + 3..]
            } else if rest.starts_with("<!") {
                let end = rest
                    .find('>')
                    .ok_or_else(|| located("unclosed <!".into()))?;
                &rest[end + 1..]
            } else if let Some(after) = rest.strip_prefix("</") {
                let end = after
                    .find('>')
                    .ok_or_else(|| located("unclosed end tag".into()))?;
                let tag = after[..end].trim().to_ascii_lowercase();
                match open.pop() {
                    Some(id) if dom.elements[id].tag == tag => {}
                    Some(id) => {
                        let inner = &dom.elements[id].tag;
                        return Err(located(format!("</{tag}> while <{inner}> is open")));
                    }
                    None => return Err(located(format!("</{tag}> closes nothing"))),
                }
                &after[end + 1..]
            } else {
                dom.element(&rest[1..], &mut open).map_err(located)?
            };
        }
        match open.last() {
            Some(&id) => Err(format!("<{}> is never closed", dom.elements[id].tag)),
            None => Ok(dom),
        }
    }

    /// Reads the start tag at `s` (after its `<`) and, for a raw-text
    /// element, its text; what follows.
    fn element<'s>(&mut self, s: &'s str, open: &mut Vec<usize>) -> Result<&'s str, String> {
        let (tag, attributes, rest, self_closing) = start_tag(s)?;
        let id = self.elements.len();
        let raw = RAW.contains(&tag.as_str());
        let void = self_closing || VOID.contains(&tag.as_str());
        self.elements.push(Element {
            tag,
            attributes,
            parent: open.last().copied(),
        });
        if void {
            return Ok(rest);
        }
        open.push(id);
        if !raw {
            return Ok(rest);
        }
        let close = format!("</{}", self.elements[id].tag);
        let end = rest
            .find(&close)
            .ok_or_else(|| format!("no {close}> after its start tag"))?;
        self.texts.push((id, rest[..end].to_string()));
        Ok(&rest[end..])
    }

    fn text(&mut self, holder: Option<&usize>, escaped: &str) {
        if let (Some(&id), false) = (holder, escaped.is_empty()) {
            self.texts.push((id, unescape(escaped)));
        }
    }

    /// Every element, in document order.
    pub fn elements(&self) -> impl Iterator<Item = Node<'_>> {
        (0..self.elements.len()).map(|id| Node { dom: self, id })
    }
}

/// A start tag's name, attributes, what follows it and whether it ended
/// in `/>`.
type StartTag<'s> = (String, Vec<(String, String)>, &'s str, bool);

fn start_tag(s: &str) -> Result<StartTag<'_>, String> {
    let stop = |c: char| c.is_whitespace() || c == '>' || c == '/' || c == '=';
    let name_end = s.find(stop).ok_or("unclosed start tag")?;
    let tag = s[..name_end].to_ascii_lowercase();
    if tag.is_empty() {
        return Err("a start tag without a name".into());
    }
    let mut s = &s[name_end..];
    let mut attributes = Vec::new();
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix("/>") {
            return Ok((tag, attributes, rest, true));
        }
        if let Some(rest) = s.strip_prefix('>') {
            return Ok((tag, attributes, rest, false));
        }
        let end = s
            .find(stop)
            .ok_or_else(|| format!("<{tag}> is not closed"))?;
        if end == 0 {
            return Err(format!("<{tag}>: unexpected {:?}", &s[..1]));
        }
        let name = s[..end].to_ascii_lowercase();
        s = &s[end..];
        let value = match s.strip_prefix('=') {
            Some(quoted) => {
                let inner = quoted.strip_prefix('"').ok_or_else(|| {
                    format!("<{tag} {name}=…>: the value is not in double quotes")
                })?;
                let close = inner
                    .find('"')
                    .ok_or_else(|| format!("<{tag} {name}=…>: unclosed value"))?;
                s = &inner[close + 1..];
                unescape(&inner[..close])
            }
            None => String::new(),
        };
        attributes.push((name, value));
    }
}

/// The references an HTML serializer writes; `&amp;` last, so that an
/// escaped reference stays one.
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

impl<'a> Node<'a> {
    fn element(&self) -> &'a Element {
        &self.dom.elements[self.id]
    }

    pub fn tag(&self) -> &'a str {
        &self.element().tag
    }

    pub fn attribute(&self, name: &str) -> Option<&'a str> {
        let attributes = &self.element().attributes;
        attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn has_class(&self, class: &str) -> bool {
        self.attribute("class")
            .is_some_and(|c| c.split_whitespace().any(|w| w == class))
    }

    pub fn parent(&self) -> Option<Node<'a>> {
        let id = self.element().parent?;
        Some(Node { dom: self.dom, id })
    }

    /// The parent, its parent, and so on.
    pub fn ancestors(&self) -> impl Iterator<Item = Node<'a>> {
        std::iter::successors(self.parent(), Node::parent)
    }

    fn holds(&self, id: usize) -> bool {
        let node = Node { dom: self.dom, id };
        id == self.id || node.ancestors().any(|a| a.id == self.id)
    }

    /// The elements inside this one, in document order.
    pub fn descendants(&self) -> impl Iterator<Item = Node<'a>> {
        let me = *self;
        self.dom
            .elements()
            .filter(move |n| n.id != me.id && me.holds(n.id))
    }

    /// All text inside, in document order.
    pub fn text(&self) -> String {
        let texts = &self.dom.texts;
        texts
            .iter()
            .filter(|(id, _)| self.holds(*id))
            .map(|(_, t)| t.as_str())
            .collect()
    }
}

#[test]
fn a_serialized_dom_reads_back_as_a_tree() {
    let html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
        <style>a > b { x: \"<i>\" }</style></head><!-- c > d -->\
        <body><div class=\"lane run\" data-run=\"r&amp;1\" title=\"&quot;a&lt;b&quot;\">\
        <span data-kind=\"episode\">w1 &amp; w2<br>!</span><img src=\"x\" alt=\"\" hidden></div>\
        <p>after</p></body></html>\n";
    let dom = Dom::parse(html).unwrap();
    let tags: Vec<&str> = dom.elements().map(|n| n.tag()).collect();
    let want = [
        "html", "head", "meta", "style", "body", "div", "span", "br", "img", "p",
    ];
    assert_eq!(tags, want);
    let lane = dom.elements().find(|n| n.has_class("run")).unwrap();
    assert_eq!(lane.attribute("data-run"), Some("r&1"));
    assert_eq!(lane.attribute("title"), Some("\"a<b\""));
    let inside: Vec<&str> = lane.descendants().map(|n| n.tag()).collect();
    assert_eq!(inside, ["span", "br", "img"], "void elements hold nothing");
    assert_eq!(lane.text(), "w1 & w2!");
    let img = dom.elements().find(|n| n.tag() == "img").unwrap();
    assert_eq!(img.attribute("hidden"), Some(""));
    assert_eq!(img.parent().unwrap().tag(), "div");
    let style = dom.elements().find(|n| n.tag() == "style").unwrap();
    assert_eq!(style.text(), "a > b { x: \"<i>\" }", "raw text");
    let p = dom.elements().find(|n| n.tag() == "p").unwrap();
    assert_eq!(
        p.ancestors().map(|n| n.tag()).collect::<Vec<_>>(),
        ["body", "html"]
    );
}

#[test]
fn a_broken_serialization_is_an_error_that_says_where() {
    let err = Dom::parse("<html><div></span></html>").unwrap_err();
    assert_eq!(err, "byte 11: </span> while <div> is open");
    let err = Dom::parse("<html><div>").unwrap_err();
    assert_eq!(err, "<div> is never closed");
    let err = Dom::parse("<p title=x></p>").unwrap_err();
    assert!(err.contains("not in double quotes"), "{err}");
}
