#!/usr/bin/env python3
# Writes parties.ini(5) from configs/example.ini, so the manual page says exactly what the
# documented example says: every section, every key with its default and its comment.
#   ini2man.py configs/example.ini VERSION > parties.ini.5
import re
import sys

def esc(s):
    s = s.replace("\\", "\\e")
    return "\\&" + s if s.startswith((".", "'")) else s

src, version = sys.argv[1], sys.argv[2]
lines = open(src).read().splitlines()
out = []
w = out.append
w(f'.TH PARTIES.INI 5 "" "parties {version}" "File Formats"')
w(".SH NAME")
w("parties.ini \\- configuration of the parties daemon")
w(".SH SYNOPSIS")
w("/etc/parties/parties.ini")
w(".SH DESCRIPTION")
w("The configuration read by \\fBparties\\fR(8) \\fB\\-c\\fR \\fIFILE\\fR. "
  "This page is generated from the annotated example installed as "
  "/etc/parties/example.ini; keys shown there commented out are optional and "
  "their value is the default.")
comment = []
pre = False

def flush_comment():
    global comment
    if comment:
        para = []
        for c in comment:
            if c.startswith("  "):  # indented: an example block
                if para:
                    w(esc(" ".join(para)))
                    para = []
                w(".nf")
                w(esc(c.strip()))
                w(".fi")
            elif c == "":
                if para:
                    w(esc(" ".join(para)))
                    para = []
                w(".PP")
            else:
                para.append(c)
        if para:
            w(esc(" ".join(para)))
    comment = []

intro = True
for ln in lines:
    m_sec = re.match(r"^\[(.*)\]\s*$", ln)
    m_key = re.match(r"^;?([a-z_][a-z0-9_]*)\s*=\s*(.*)$", ln)
    if ln.startswith(";") and not m_key:
        comment.append(ln[1:][1:] if ln[1:].startswith(" ") else ln[1:])
        continue
    if m_sec:
        if intro:
            flush_comment()
            intro = False
            w(".SH SECTIONS")
        pending = comment
        comment = []
        w(f".SS [{esc(m_sec.group(1))}]")
        comment = pending
        flush_comment()
        continue
    if m_key:
        key, val = m_key.group(1), m_key.group(2)
        w(".TP")
        w(f"\\fB{key}\\fR = {esc(val)}" + ("" if ln.startswith(";") else " (example value)"))
        flush_comment()
        continue
    if ln.strip() == "":
        flush_comment()
        continue
flush_comment()
w(".SH FILES")
w(".TP")
w("/etc/parties/parties.ini")
w("the configuration the systemd unit parties.service starts with")
w(".TP")
w("/etc/parties/example.ini")
w("every key with its default")
w(".SH SEE ALSO")
w("\\fBparties\\fR(8), \\fBebee\\fR(8)")
print("\n".join(out))
