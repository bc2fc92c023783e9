package web

// Style is the one stylesheet, inlined in every page (CSP allows it by
// hash: change it here and the hash follows). It follows the system's
// light or dark scheme, reflows on a phone (tables scroll inside their
// box) and keeps the keyboard focus visible.
const Style = `
:root{color-scheme:light dark;--fg:#1b1f24;--bg:#fff;--muted:#57606a;--line:#d0d7de;--accent:#0b57d0;--soft:#f3f5f8;--bad:#b42318;--good:#1a7f37;--warn:#9a6700}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#9198a1;--line:#30363d;--accent:#6cb6ff;--soft:#161b22;--bad:#ff7b72;--good:#56d364;--warn:#e3b341}}
*{box-sizing:border-box}
html{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;color:var(--fg);background:var(--bg)}
body{margin:0 auto;max-width:72rem;padding:0 1rem 2rem}
a{color:var(--accent)}
a:focus-visible,button:focus-visible,input:focus-visible,summary:focus-visible,main:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
.skip{position:absolute;left:-999px;top:0}
.skip:focus{left:1rem;background:var(--bg);padding:.5rem;z-index:1}
header{border-bottom:1px solid var(--line);padding:.75rem 0;margin-bottom:1rem}
nav ol{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:.25rem .5rem;font-size:.9rem}
nav li+li:before{content:"/";color:var(--muted);margin-right:.5rem}
h1{font-size:1.5rem;margin:.5rem 0;overflow-wrap:anywhere}
h2{font-size:1.2rem;margin:1.5rem 0 .5rem}
p,dl{margin:.5rem 0}
.muted{color:var(--muted)}
.bad{color:var(--bad)}.good{color:var(--good)}.warn{color:var(--warn)}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(10rem,1fr));gap:.75rem;margin:1rem 0}
.card{border:1px solid var(--line);border-radius:.5rem;padding:.75rem;background:var(--soft)}
.card b{display:block;font-size:1.4rem;font-variant-numeric:tabular-nums}
.scroll{overflow-x:auto;border:1px solid var(--line);border-radius:.5rem}
table{border-collapse:collapse;width:100%;font-size:.9rem}
th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--soft);position:sticky;top:0}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.url{overflow-wrap:anywhere;min-width:12rem}
code,.hash{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85em;overflow-wrap:anywhere}
.tag{display:inline-block;border-radius:1rem;padding:0 .5rem;font-size:.8rem;border:1px solid var(--line)}
.created{color:var(--good)}.updated{color:var(--accent)}.deleted{color:var(--bad)}
.pager{display:flex;flex-wrap:wrap;gap:.5rem;margin:.75rem 0;align-items:center}
.pager a,.pager span{padding:.25rem .6rem;border:1px solid var(--line);border-radius:.4rem;text-decoration:none}
.pager [aria-current]{background:var(--soft);font-weight:600}
figure{margin:1rem 0}figcaption{color:var(--muted);font-size:.9rem}
svg.chart{width:100%;height:auto;max-height:14rem}
svg.chart .bar{fill:var(--accent)}svg.chart .axis{stroke:var(--line)}svg.chart text{fill:var(--muted);font-size:10px}
form.inline{display:inline}
button,input{font:inherit;padding:.3rem .7rem;border:1px solid var(--line);border-radius:.4rem;background:var(--soft);color:var(--fg)}
button{cursor:pointer}
footer{margin-top:2rem;color:var(--muted);font-size:.85rem;border-top:1px solid var(--line);padding-top:.75rem}
table.fit{table-layout:fixed;font-size:.85rem}
table.fit th,table.fit td{overflow-wrap:anywhere;padding:.3rem .4rem;white-space:normal}
table.fit col.c-wide{width:18.75%}table.fit col.c-mid{width:10%}table.fit col.c-time{width:9%}table.fit col.c-narrow{width:7.25%}
table.fit .line{display:block;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
table.fit time{white-space:nowrap}
table.fit summary{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;cursor:pointer}
table.fit details[open] summary{white-space:normal}
table.fit .chain{white-space:pre-wrap;font-size:.8rem;margin-top:.25rem}
@media (max-width:60rem){table.fit,table.fit tbody,table.fit td{display:block;width:auto}table.fit colgroup,table.fit thead{display:none}table.fit tr{display:grid;grid-template-columns:repeat(auto-fill,minmax(8.5rem,1fr));border-bottom:2px solid var(--line)}table.fit td{border:0;text-align:left}table.fit td.id,table.fit td.error{grid-column:1/-1}table.fit td[data-label]:before{content:attr(data-label);display:block;color:var(--muted);font-size:.75rem}}
@media (max-width:40rem){html{font-size:15px}body{padding:0 .6rem 1.5rem}th,td{padding:.3rem .4rem}}
`
