"""mem0's README chat loop (mem0ai 2.2.1, "Basic Usage") with one change to its memory code: the
import. The reply comes from a stand-in for the README's OpenAI call (no network here): it
answers with the memories it was given, so what memory returns is what you see.

    python examples/mem0_chat.py        # then type; `exit` quits
"""

from mnemon import Memory  # was: from mem0 import Memory

memory = Memory()


def reply(system_prompt: str, message: str) -> str:
    """Stands in for `openai_client.chat.completions.create(...)`."""
    remembered = system_prompt.split("User Memories:\n", 1)[1].strip()
    return f"(remembering: {remembered or 'nothing yet'})"


def chat_with_memories(message: str, user_id: str = "default_user") -> str:
    # Retrieve relevant memories
    relevant_memories = memory.search(query=message, filters={"user_id": user_id}, top_k=3)
    memories_str = "\n".join(f"- {entry['memory']}" for entry in relevant_memories["results"])

    # Generate Assistant response
    system_prompt = f"You are a helpful AI. Answer the question based on query and memories.\nUser Memories:\n{memories_str}"
    messages = [{"role": "system", "content": system_prompt}, {"role": "user", "content": message}]
    assistant_response = reply(system_prompt, message)

    # Create new memories from the conversation
    messages.append({"role": "assistant", "content": assistant_response})
    memory.add(messages, user_id=user_id)

    return assistant_response


def main():
    print("Chat with AI (type 'exit' to quit)")
    while True:
        user_input = input("You: ").strip()
        if user_input.lower() == "exit":
            print("Goodbye!")
            break
        print(f"AI: {chat_with_memories(user_input)}")


if __name__ == "__main__":
    main()
