/* Built with -static: exits at once (uzswap run must not take its quick
 * exit for a pager that could not be set up). */
int main(void) { return 0; }
