/* The page's CSS and its one script, built into the binary so that the page
 * needs nothing from outside the lab. Every page reads without the script: it
 * only makes a log page follow its end without reloading. */
#include "web_internal.h"

const char web_css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}"
	"header{background:#23303d;color:#fff;padding:.5em 1em;display:flex;gap:1.5em;align-items:center}"
	"header a{color:#cfe3ff;text-decoration:none;margin-right:1em}.brand{font-weight:700}"
	".live{margin-left:auto;font-size:12px;color:#9fb3c8}"
	"main{padding:1em 1.5em;max-width:1400px}h1{font-size:20px;margin:.2em 0 .6em}"
	"h2{font-size:16px;margin:1.4em 0 .5em}"
	"table{border-collapse:collapse;background:#fff;margin-bottom:1em}"
	"th,td{border-bottom:1px solid #e3e6ea;padding:3px 8px;text-align:left;vertical-align:top}"
	"th{background:#eef1f4;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}"
	"pre{background:#fff;border:1px solid #e3e6ea;padding:.6em;overflow:auto;max-height:40em}"
	".st{padding:0 .4em;border-radius:3px;font-size:12px;color:#fff;background:#8a94a0}"
	".st-running,.st-assigned{background:#2f7fd8}.st-succeeded,.st-up{background:#2e9d55}"
	".st-failed,.st-down{background:#d0433a}.st-cancelled{background:#6c6f73}"
	".st-queued,.st-waiting{background:#c98a14}.st-draining{background:#a05ec4}"
	".bar,.gauge{display:inline-flex;width:120px;height:10px;background:#e3e6ea;border-radius:2px;"
	"overflow:hidden;vertical-align:middle;margin-right:4px}.bar i,.gauge i{display:block;height:100%}"
	".s-succeeded{background:#2e9d55}.s-running{background:#2f7fd8}.s-queued,.s-waiting{background:#e0b44c}"
	".s-failed{background:#d0433a}.s-cancelled{background:#8a8d91}"
	".g-parsa{background:#2f7fd8}.g-out{background:#e08a2c}"
	".grid{display:flex;flex-wrap:wrap;gap:2px;max-width:900px}"
	".grid a{display:block;width:14px;height:14px;border-radius:2px}"
	".c-succeeded{background:#2e9d55}.c-running,.c-assigned{background:#2f7fd8}"
	".c-queued{background:#e0b44c}.c-failed{background:#d0433a}.c-cancelled{background:#8a8d91}"
	"form.filters{margin-bottom:.8em}form.filters input,form.filters select{margin-right:.6em}"
	".error{color:#b3261e}.muted{color:#6b7580}.cards{display:flex;gap:1em;flex-wrap:wrap}"
	".card{background:#fff;border:1px solid #e3e6ea;padding:.6em 1em;min-width:10em}"
	".card b{font-size:20px;display:block}svg text{font:12px system-ui,sans-serif}";

const char web_log_js[] =
	"<script>\n"
	"addEventListener('DOMContentLoaded',function(){\n"
	" var pre=document.getElementById('log');if(!pre)return;\n"
	" var off=+pre.dataset.offset,url=pre.dataset.raw,live=pre.dataset.live==='1';\n"
	" var meta=document.querySelector('meta[http-equiv=refresh]');if(meta)meta.remove();\n"
	" scrollTo(0,document.body.scrollHeight);\n"
	" function poll(){fetch(url+'&offset='+off).then(function(r){\n"
	"  var n=r.headers.get('X-Parsa-Next');var more=r.headers.get('X-Parsa-Live')==='1';\n"
	"  return r.text().then(function(t){if(t.length){pre.textContent+=t;scrollTo(0,document.body.scrollHeight);}\n"
	"   if(n)off=+n;if(more)setTimeout(poll,2000);});\n"
	" }).catch(function(){setTimeout(poll,5000);});}\n"
	" if(live)setTimeout(poll,2000);\n"
	"});\n"
	"</script>";
