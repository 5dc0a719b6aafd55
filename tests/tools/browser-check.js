// browser-check.js - open dlprof's pictures in a real browser (headless Chromium through
// playwright-core) and report what a person would see, as JSON on stdout.
//
//   node browser-check.js flame FLAME.svg FRAME SEARCH
//       the flame graph: frames in the DOM, the tooltip line when hovering FRAME, the
//       "Matched" line after searching SEARCH (typed into the prompt, as a person would),
//       FRAME's width before and after clicking it (zoom), and after "Reset Zoom"
//   node browser-check.js speedscope RELEASE_DIR PROFILE.json
//       speedscope's app (its dist/release) with PROFILE loaded through its file input:
//       the page text, the sandwich view's text (key 3), a screenshot's size against a
//       blank page's
//
// Environment: CHROMIUM (default /usr/bin/chromium), PLAYWRIGHT (the playwright-core
// module's path).
'use strict';
const path = require('path');
const fs = require('fs');
const { chromium } = require(process.env.PLAYWRIGHT || 'playwright-core');

async function flame(page, file, frame, term) {
	const out = {};
	await page.goto('file://' + path.resolve(file));
	out.frames = await page.$$eval('#frames > g', (gs) => gs.length);
	const g = page.locator('#frames > g', { has: page.locator('title', { hasText: new RegExp('^' + frame + ' \\(') }) }).first();
	const rect = g.locator('rect');
	out.width_before = Number(await rect.getAttribute('width'));
	await g.hover();
	out.details = await page.textContent('#details');
	page.once('dialog', (d) => d.accept(term));
	await page.click('#search');
	await page.waitForTimeout(200);
	out.matched = await page.textContent('#matched');
	out.highlighted = await page.$$eval('#frames > g rect', (rs) =>
		rs.filter((r) => r.getAttribute('fill') === 'rgb(230,0,230)').length);
	await g.click();
	await page.waitForTimeout(200);
	out.width_zoomed = Number(await rect.getAttribute('width'));
	out.hidden_zoomed = await page.$$eval('#frames > g', (gs) => gs.filter((x) => x.style.display === 'none').length);
	await page.click('#unzoom');
	await page.waitForTimeout(200);
	out.width_reset = Number(await rect.getAttribute('width'));
	out.hidden_reset = await page.$$eval('#frames > g', (gs) => gs.filter((x) => x.style.display === 'none').length);
	out.svg_width = Number(await page.$eval('svg', (s) => s.getAttribute('width')));
	return out;
}

async function speedscope(page, dir, profile, tmp) {
	const out = {};
	const index = 'file://' + path.resolve(dir, 'index.html');
	await page.goto('about:blank');
	await page.screenshot({ path: path.join(tmp, 'blank.png') });
	await page.goto(index);
	await page.setInputFiles('input[type=file]', path.resolve(profile));
	await page.waitForTimeout(2500);
	out.text = await page.evaluate(() => document.body.innerText);
	await page.screenshot({ path: path.join(tmp, 'speedscope.png') });
	await page.keyboard.press('3');
	await page.waitForTimeout(1000);
	out.sandwich = await page.evaluate(() => document.body.innerText);
	out.blank_png = fs.statSync(path.join(tmp, 'blank.png')).size;
	out.png = fs.statSync(path.join(tmp, 'speedscope.png')).size;
	return out;
}

(async () => {
	const [what, a, b, c] = process.argv.slice(2);
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		args: ['--no-sandbox', '--disable-dev-shm-usage'],
	});
	const page = await browser.newPage({ viewport: { width: 1300, height: 800 } });
	const errors = [];
	page.on('pageerror', (e) => errors.push(String(e)));
	let out;
	if (what === 'flame')
		out = await flame(page, a, b, c);
	else if (what === 'speedscope')
		out = await speedscope(page, a, b, path.dirname(path.resolve(b)));
	else
		throw new Error('usage: browser-check.js flame|speedscope ...');
	out.page_errors = errors;
	await browser.close();
	console.log(JSON.stringify(out));
})().catch((e) => {
	console.error('browser-check: ' + e.message);
	process.exit(1);
});
