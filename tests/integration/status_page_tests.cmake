# musterd's status page in Debian's headless Chromium (chromium, chromium-driver):
# a job of three nodes, one killed; the page's DOM shows it dead within 2 s.
muster_integration_test(status_page status_page_test.py TIMEOUT 180 LABELS elastic browser)
