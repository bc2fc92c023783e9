// Reads a sitemap (index) with the npm sitemapper package, as a crawler
// would, and prints the URLs it found as JSON. Run by TestPlainSitemap:
// node fetch.mjs SITEMAPPER_DIR URL
import { pathToFileURL } from "node:url";
import path from "node:path";

const [dir, url] = process.argv.slice(2);
const { default: Sitemapper } = await import(pathToFileURL(path.join(dir, "node_modules", "sitemapper", "lib", "assets", "sitemapper.js")).href);
const sm = new Sitemapper({ url, timeout: 15000, concurrency: 2, retries: 0 });
const res = await sm.fetch();
console.log(JSON.stringify({ sites: res.sites, errors: res.errors }));
