/* placeholder: replaced by the command's owner */
#include "cmds.h"
#include "util.h"
int cmd_check_isa(int argc, const char **argv)
{
	(void)argc; (void)argv;
	return error("not implemented yet"), EXIT_FATAL;
}
